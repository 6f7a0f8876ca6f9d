/*
 * toolproof's spawner in C: what _spawner_main.py does, without Python per command.
 *
 * Usage: spawner SOCKET_FD PROCS_FILE...
 *
 * The same protocol and the same steps as _spawner_main.py (read its docstring): on
 * the inherited socket, frames of a 4-byte big-endian length and a JSON object. It
 * writes {"ready": pid} once; for each request {"argv", "env", "cwd", "uid", "gid",
 * "rlimits", "fds"} (with len(fds) descriptors attached by SCM_RIGHTS) it answers
 * {"started": pid, "helped": true} once the command has exec'd, or {"error": text}
 * (with "errno": the step's errno when the child failed before its exec), and later {"exit": pid, "status": waitstatus}. A request that is not understood
 * gets an error starting "bad request"; a broken frame (above 16 MiB) ends it. End
 * of file on the socket (the harness exited or closed it) makes it SIGKILL every
 * other process in its cgroup(s) and exit.
 *
 * The child, between fork and exec: new session, empty signal mask, default SIGPIPE
 * and SIGXFSZ, oom_score_adj back to 0, its descriptors put in place and all others
 * closed (the socket too), the rlimits set, no supplementary groups, then the
 * unprivileged gid and uid (never 0: checked again after the drop), then exec of
 * argv[0] searched on the request's PATH. The child is a vfork (no copy of this
 * process, which waits until the exec), and no second program (the exec helper) is
 * exec'd before the command.
 *
 * The requests' JSON is parsed by _spawner_json.h. Built once per machine by
 * _exec_helper.py (cc -O2, static where possible); where there is no compiler, the
 * harness runs _spawner_main.py instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_FRAME (16u * 1024 * 1024)
#define MAX_FDS 16
#define MAX_TARGET 65535

#include "_spawner_json.h"

/* ---- replies ---- */

static int sock = -1;

static void send_all(const char *data, size_t size) {
    while (size > 0) {
        ssize_t sent = send(sock, data, size, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent <= 0)
            return; /* the harness is gone: end of file on the next read says so */
        data += sent;
        size -= (size_t)sent;
    }
}

static void send_frame(const char *body, size_t size) {
    char header[4] = {(char)(size >> 24), (char)(size >> 16), (char)(size >> 8), (char)size};
    char *frame = malloc(size + 4);
    if (frame == NULL)
        return;
    memcpy(frame, header, 4);
    memcpy(frame + 4, body, size);
    send_all(frame, size + 4);
    free(frame);
}

static void send_numbers(const char *format, ...) {
    char body[128];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(body, sizeof body, format, args);
    va_end(args);
    if (n > 0 && (size_t)n < sizeof body)
        send_frame(body, (size_t)n);
}

/* {"error": text} (with "errno": code when code >= 0): every byte that is not
 * printable ASCII is escaped (as \u00XX). */
static void send_failure(int code, const char *format, va_list args) {
    char text[4096];
    vsnprintf(text, sizeof text, format, args);
    char body[sizeof text * 6 + 64]; /* the escaped text, the quotes, braces and errno */
    size_t n = (size_t)snprintf(body, sizeof body, "{\"error\": \"");
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\') {
            body[n++] = '\\';
            body[n++] = (char)*c;
        } else if (*c < 0x20 || *c >= 0x7f) {
            n += (size_t)snprintf(body + n, 7, "\\u%04x", *c);
        } else {
            body[n++] = (char)*c;
        }
    }
    body[n++] = '"';
    if (code >= 0)
        n += (size_t)snprintf(body + n, 32, ", \"errno\": %d", code);
    body[n++] = '}';
    send_frame(body, n);
}

static void send_error(const char *format, ...) {
    va_list args;
    va_start(args, format);
    send_failure(-1, format, args);
    va_end(args);
}

/* A start failure with the errno of the step that failed (see child_fail). */
static void send_start_error(int code, const char *format, ...) {
    va_list args;
    va_start(args, format);
    send_failure(code, format, args);
    va_end(args);
}

/* ---- requests ---- */

typedef struct {
    char **argv, **env;
    const char *cwd;
    uid_t uid;
    gid_t gid;
    int nlimits;
    long long limits[16][3];
    int nfds;
    int fds[MAX_FDS];
} request;

static int strings(const node *list, size_t at_least) {
    if (list == NULL || list->kind != J_ARRAY || list->count < at_least)
        return 0;
    for (size_t i = 0; i < list->count; i++)
        if (list->items[i]->kind != J_STRING || strlen(list->items[i]->text) != list->items[i]->length)
            return 0;
    return 1;
}

static int by_text(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 when ``object`` names one key twice (json.dumps never does), -1 out of memory:
 * sorted, O(n log n), where comparing every pair was quadratic in a huge env. */
static int repeats(const node *object) {
    if (object->count < 2)
        return 0;
    char **keys = malloc(object->count * sizeof *keys);
    if (keys == NULL)
        return -1;
    memcpy(keys, object->keys, object->count * sizeof *keys);
    qsort(keys, object->count, sizeof *keys, by_text);
    int found = 0;
    for (size_t i = 1; i < object->count && !found; i++)
        found = strcmp(keys[i - 1], keys[i]) == 0;
    free(keys);
    return found;
}

/* Check ``tree`` as _spawner_main._check does and fill ``req``; NULL or what is wrong. */
static const char *check(const node *tree, request *req) {
    if (tree->kind != J_OBJECT)
        return "a request must be a JSON object";
    if (repeats(tree) != 0)
        return "a request must not repeat a field";
    const node *argv = field(tree, "argv"), *env = field(tree, "env"), *cwd = field(tree, "cwd");
    if (!strings(argv, 1))
        return "argv must be a non-empty list of strings";
    if (env == NULL || env->kind != J_OBJECT)
        return "env must map strings to strings";
    if (repeats(env) != 0)
        return "env must not repeat a name";
    for (size_t i = 0; i < env->count; i++) {
        const node *value = env->items[i];
        if (value->kind != J_STRING || strlen(value->text) != value->length ||
            env->keys[i][0] == '\0' || strchr(env->keys[i], '=') != NULL)
            return "env must map strings to strings";
    }
    if (cwd == NULL || cwd->kind != J_STRING || strlen(cwd->text) != cwd->length)
        return "cwd must be a string";
    const char *ids[] = {"uid", "gid"};
    long long values[2];
    for (int i = 0; i < 2; i++) {
        const node *id = field(tree, ids[i]);
        if (id == NULL || id->kind != J_INT || id->integer <= 0 || id->integer > 0x7fffffff)
            return i == 0 ? "uid must be a positive integer (never root)"
                          : "gid must be a positive integer (never root)";
        values[i] = id->integer;
    }
    const node *rlimits = field(tree, "rlimits");
    if (rlimits == NULL || rlimits->kind != J_ARRAY || rlimits->count > 16)
        return "rlimits must be a list of [resource, soft, hard]";
    for (size_t i = 0; i < rlimits->count; i++) {
        const node *limit = rlimits->items[i];
        if (limit->kind != J_ARRAY || limit->count != 3)
            return "rlimits must be a list of [resource, soft, hard]";
        for (int j = 0; j < 3; j++) {
            if (limit->items[j]->kind != J_INT)
                return "rlimits must be a list of [resource, soft, hard]";
            req->limits[i][j] = limit->items[j]->integer;
        }
    }
    const node *fds = field(tree, "fds");
    if (fds == NULL || fds->kind != J_ARRAY || fds->count > MAX_FDS)
        return "fds must be a list of descriptor numbers";
    for (size_t i = 0; i < fds->count; i++) {
        const node *fd = fds->items[i];
        if (fd->kind != J_INT || fd->integer < 0 || fd->integer > MAX_TARGET)
            return "fds must be a list of descriptor numbers";
        req->fds[i] = (int)fd->integer;
        for (size_t j = 0; j < i; j++)
            if (req->fds[j] == req->fds[i])
                return "fds must not repeat a number";
    }
    req->nfds = (int)fds->count;
    req->nlimits = (int)rlimits->count;
    req->cwd = cwd->text;
    req->uid = (uid_t)values[0];
    req->gid = (gid_t)values[1];
    req->argv = calloc(argv->count + 1, sizeof(char *));
    req->env = calloc(env->count + 1, sizeof(char *));
    if (req->argv == NULL || req->env == NULL)
        return "out of memory";
    for (size_t i = 0; i < argv->count; i++)
        req->argv[i] = argv->items[i]->text;
    size_t n = 0;
    for (size_t i = 0; i < env->count; i++) { /* no name repeats (checked above) */
        size_t size = strlen(env->keys[i]) + env->items[i]->length + 2;
        req->env[n] = malloc(size);
        if (req->env[n] == NULL)
            return "out of memory";
        snprintf(req->env[n++], size, "%s=%s", env->keys[i], env->items[i]->text);
    }
    return NULL;
}

/* ---- the child ---- */

/* After vfork: strerrordesc_np is a constant string (strerror may translate, and
 * allocate in the memory the child shares with this process). It writes
 * "ERRNO:STEP: DESCRIPTION" ("11:exec: Resource temporarily unavailable"): the
 * parent sends the errno as a field of its own, and the harness decides from it
 * whose failure it was (_errors.start_failure). */
__attribute__((noreturn)) static void child_fail(int errfd, const char *what) {
    char text[600];
    int code = errno;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    const char *why = strerrordesc_np(code);
#else
    const char *why = NULL; /* the number alone */
#endif
    int n = why != NULL ? snprintf(text, sizeof text, "%d:%s: %s", code, what, why)
                        : snprintf(text, sizeof text, "%d:%s: error %d", code, what, code);
    if (n > 0)
        (void)!write(errfd, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
    _exit(127);
}

static void close_others(int *keep, int count, int errfd) {
    unsigned int from = 0;
    for (int i = 1; i < count; i++) /* an insertion sort: no allocation after vfork */
        for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int swap = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = swap;
        }
    for (int i = 0; i <= count; i++) {
        unsigned int to = i < count ? (unsigned int)keep[i] : ~0U;
        if (to > from && syscall(SYS_close_range, from, to - 1, 0) != 0) {
            if (errno != ENOSYS)
                child_fail(errfd, "close_range");
            long most = sysconf(_SC_OPEN_MAX);
            for (long fd = from; fd < (i < count ? (long)to : most); fd++)
                (void)close((int)fd);
        }
        if (i < count)
            from = to + 1;
    }
}

/* execvpe as Python's os.execvpe does it: the PATH searched is the request's own (glibc's
 * would search this process's), with nothing allocated (this runs after vfork). */
__attribute__((noreturn)) static void exec_search(const request *req, int errfd) {
    const char *name = req->argv[0];
    if (strchr(name, '/') != NULL) {
        execve(name, req->argv, req->env);
        child_fail(errfd, "exec");
    }
    const char *path = "/bin:/usr/bin";
    for (char **e = req->env; *e != NULL; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    int denied = 0, last = ENOENT;
    size_t length = strlen(name);
    for (const char *dir = path;; dir++) {
        const char *end = strchrnul(dir, ':');
        char full[4096];
        size_t size = (size_t)(end - dir);
        if (size == 0) {
            full[0] = '.';
            size = 1;
        } else if (size < sizeof full) {
            memcpy(full, dir, size);
        }
        if (size + length + 2 <= sizeof full) {
            full[size] = '/';
            memcpy(full + size + 1, name, length + 1);
            execve(full, req->argv, req->env);
            last = errno;
            denied |= errno == EACCES;
        }
        dir = end;
        if (*dir == '\0')
            break;
    }
    errno = denied ? EACCES : last;
    child_fail(errfd, "exec");
}

/* In the vforked child: only its own stack is written, nothing is allocated, and it
 * never returns (exec or _exit). */
__attribute__((noreturn)) static void child(const request *req, const int *received, int errw) {
    sigset_t none;
    sigemptyset(&none);
    if (setsid() < 0)
        child_fail(errw, "setsid");
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGXFSZ, SIG_DFL);
    int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (adj < 0 || write(adj, "0", 1) != 1)
        child_fail(errw, "oom_score_adj");
    (void)close(adj);
    int high = 2;
    for (int i = 0; i < req->nfds; i++)
        if (req->fds[i] > high)
            high = req->fds[i];
    high++;
    int errfd = fcntl(errw, F_DUPFD_CLOEXEC, high);
    if (errfd < 0)
        child_fail(errw, "fcntl");
    int sources[MAX_FDS];
    for (int i = 0; i < req->nfds; i++)
        if ((sources[i] = fcntl(received[i], F_DUPFD_CLOEXEC, high)) < 0)
            child_fail(errfd, "fcntl");
    for (int i = 0; i < req->nfds; i++)
        if (dup2(sources[i], req->fds[i]) < 0)
            child_fail(errfd, "dup2");
    int keep[MAX_FDS + 1];
    for (int i = 0; i < req->nfds; i++)
        keep[i] = req->fds[i];
    keep[req->nfds] = errfd;
    close_others(keep, req->nfds + 1, errfd);
    for (int i = 0; i < req->nlimits; i++) {
        const long long *spec = req->limits[i];
        struct rlimit value = {spec[1] < 0 ? RLIM_INFINITY : (rlim_t)spec[1],
                               spec[2] < 0 ? RLIM_INFINITY : (rlim_t)spec[2]};
        if (spec[0] < 0 || spec[0] >= RLIM_NLIMITS || spec[1] < -1 || spec[2] < -1)
            errno = EINVAL; /* -1 alone is RLIM_INFINITY, as in Python's resource module */
        else if (setrlimit((int)spec[0], &value) == 0)
            continue;
        child_fail(errfd, "setrlimit");
    }
    if (chdir(req->cwd) != 0)
        child_fail(errfd, "chdir");
    /* The system calls themselves: this task alone (glibc's wrappers would also signal
     * every thread of the process, whose memory a vfork child shares). */
    if (syscall(SYS_setgroups, 0, NULL) != 0)
        child_fail(errfd, "setgroups");
    if (syscall(SYS_setresgid, req->gid, req->gid, req->gid) != 0)
        child_fail(errfd, "setresgid");
    if (syscall(SYS_setresuid, req->uid, req->uid, req->uid) != 0)
        child_fail(errfd, "setresuid");
    if (getuid() == 0 || geteuid() == 0) {
        errno = EPERM;
        child_fail(errfd, "still root");
    }
    exec_search(req, errfd);
}

/* Start the command: its pid once it exec'd (0 after an error reply was sent). */
static pid_t start(const request *req, const int *received, int nreceived) {
    if (nreceived != req->nfds) {
        send_error("%d descriptors arrived for %d numbers", nreceived, req->nfds);
        return 0;
    }
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
        send_error("could not start the command: pipe: %s", strerror(errno));
        return 0;
    }
    pid_t pid = vfork(); /* no copy of this process: it waits until the exec */
    if (pid == 0)
        child(req, received, pipe_fds[1]);
    int saved = errno;
    close(pipe_fds[1]);
    if (pid < 0) {
        close(pipe_fds[0]);
        send_error("could not start the command: fork: %s", strerror(saved));
        return 0;
    }
    char said[1024];
    size_t n = 0;
    for (;;) {
        ssize_t got = read(pipe_fds[0], said + n, sizeof said - 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
        if (n == sizeof said - 1)
            break;
    }
    close(pipe_fds[0]);
    if (n == 0)
        return pid;
    said[n] = '\0';
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    char *step = said;
    long code = strtol(said, &step, 10); /* "ERRNO:" first (child_fail) */
    if (step == said || *step != ':' || code < 0 || code > 4095)
        code = -1, step = said;
    else
        step++;
    send_start_error((int)code, "could not start '%s': %s", req->argv[0], step);
    return 0;
}

/* ---- the loop ---- */

static void kill_cgroups(char **procs_files, int count, int sigfd) {
    pid_t me = getpid();
    for (int pass = 0; pass < 50; pass++) {
        int found = 0;
        for (int i = 0; i < count; i++) {
            FILE *procs = fopen(procs_files[i], "re");
            if (procs == NULL)
                continue;
            long pid;
            while (fscanf(procs, "%ld", &pid) == 1) {
                if (pid != me && pid > 0) {
                    found = 1;
                    (void)kill((pid_t)pid, SIGKILL);
                }
            }
            fclose(procs);
        }
        if (!found)
            return;
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
        struct pollfd wait_for = {sigfd, POLLIN, 0};
        (void)poll(&wait_for, 1, 20);
        struct signalfd_siginfo info;
        while (read(sigfd, &info, sizeof info) > 0) {
        }
    }
}

typedef struct {
    unsigned char *data;
    size_t size, room;
    int fds[64];
    int nfds;
} inbox;

/* Read what is there; 0 at end of file, -1 on an error. */
static int fill(inbox *in) {
    if (in->room - in->size < 65536) {
        size_t room = in->room ? in->room * 2 : 131072;
        unsigned char *data = realloc(in->data, room);
        if (data == NULL)
            return -1;
        in->data = data;
        in->room = room;
    }
    char control[CMSG_SPACE(MAX_FDS * sizeof(int))];
    struct iovec iov = {in->data + in->size, 65536};
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t got;
    do {
        got = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (got < 0 && errno == EINTR);
    if (got < 0)
        return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int *fds = (int *)CMSG_DATA(c);
        for (int i = 0; i < count; i++) {
            if (in->nfds < (int)(sizeof in->fds / sizeof in->fds[0]))
                in->fds[in->nfds++] = fds[i];
            else
                close(fds[i]);
        }
    }
    if (got == 0)
        return 0;
    in->size += (size_t)got;
    return 1;
}

static void serve_frame(const unsigned char *body, size_t size, inbox *in) {
    int received[64];
    int nreceived = in->nfds;
    memcpy(received, in->fds, sizeof(int) * (size_t)nreceived);
    in->nfds = 0;
    parser p = {body, body + size, NULL};
    node *tree = parse_value(&p, 0);
    if (tree != NULL) {
        skip_space(&p);
        if (p.at != p.end) {
            release(tree);
            tree = NULL;
            p.error = "extra data after the object";
        }
    }
    request req;
    memset(&req, 0, sizeof req);
    const char *wrong = tree == NULL ? p.error : check(tree, &req);
    if (wrong != NULL) {
        send_error("bad request: %s", wrong);
    } else {
        pid_t pid = start(&req, received, nreceived);
        if (pid > 0)
            send_numbers("{\"started\": %d, \"helped\": true}", (int)pid);
    }
    for (int i = 0; i < nreceived; i++)
        close(received[i]);
    if (req.env != NULL)
        for (char **e = req.env; *e != NULL; e++)
            free(*e);
    free(req.env);
    free(req.argv);
    release(tree);
}

int main(int argc, char **argv) {
    if (argc < 2 || argv[1][0] < '0' || argv[1][0] > '9') {
        fprintf(stderr, "usage: spawner SOCKET_FD [PROCS_FILE...]\n");
        return 2;
    }
    sock = atoi(argv[1]);
    char **procs_files = argv + 2;
    int nprocs = argc - 2;
    if (fcntl(sock, F_SETFD, FD_CLOEXEC) != 0) {
        perror("toolproof spawner: the socket");
        return 1;
    }
    if (chdir("/") != 0)
        return 1;
    /* Never the OOM killer's choice; every child resets it to 0. */
    int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (adj >= 0) {
        (void)!write(adj, "-1000", 5);
        close(adj);
    }
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sigfd < 0) {
        perror("toolproof spawner: signalfd");
        return 1;
    }
    send_numbers("{\"ready\": %d}", (int)getpid());
    inbox in = {0};
    for (;;) {
        struct pollfd fds[2] = {{sock, POLLIN, 0}, {sigfd, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[1].revents & POLLIN) {
            struct signalfd_siginfo info;
            while (read(sigfd, &info, sizeof info) > 0) {
            }
            int status;
            pid_t pid;
            while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
                send_numbers("{\"exit\": %d, \"status\": %d}", (int)pid, status);
        }
        if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        int got = fill(&in);
        if (got <= 0) {
            kill_cgroups(procs_files, nprocs, sigfd);
            if (got < 0)
                fprintf(stderr, "toolproof spawner: %s\n", strerror(errno));
            return got < 0;
        }
        size_t used = 0;
        while (in.size - used >= 4) {
            const unsigned char *h = in.data + used;
            size_t size = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
            if (size > MAX_FRAME) {
                fprintf(stderr, "toolproof spawner: frame of %zu bytes\n", size);
                kill_cgroups(procs_files, nprocs, sigfd);
                return 1;
            }
            if (in.size - used - 4 < size)
                break;
            serve_frame(h + 4, size, &in);
            used += 4 + size;
        }
        memmove(in.data, in.data + used, in.size - used);
        in.size -= used;
    }
    kill_cgroups(procs_files, nprocs, sigfd);
    return 1;
}
