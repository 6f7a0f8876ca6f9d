/*
 * toolproof's exec helper: the last steps before a sandboxed command, in C.
 *
 * The sandbox's spawner (_spawner_main.py, root) starts this with posix_spawn (a
 * vfork: no copy of the spawner's memory), which has already given it a new
 * session, an empty signal mask, default SIGPIPE and SIGXFSZ, and its descriptors
 * at their numbers. Here, in the order the spawner's Python child used: the
 * oom_score_adj back to 0, every other descriptor closed, the rlimits set, the
 * directory changed, no supplementary groups, the unprivileged gid and uid (never
 * 0), then exec of the command (searched on the environment's PATH). The spawner
 * pays for one small exec instead of a fork of a Python process and Python code in
 * the child (docs/isolation.md, "The spawner").
 *
 * Usage (every number in decimal; a limit of -1 is RLIM_INFINITY):
 *
 *   helper ERRFD UID GID CWD NKEEP FD... NLIMITS (RESOURCE SOFT HARD)... -- PROGRAM ARG...
 *
 * ERRFD is a pipe's write end: when a step fails, the helper writes "ERRNO:STEP: WHY"
 * there and exits 127; on a successful exec it is closed (close-on-exec), so the
 * spawner reads end of file. The FDs of NKEEP are kept open besides 0, 1, 2 and
 * ERRFD. Built by _exec_helper.py with the system's C compiler; where there is
 * none, the spawner forks and does the same steps in Python.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_KEEP 64
#define MAX_FD 65535

static int errfd = -1;

static void fail(const char *what, const char *detail) {
    char buf[600];
    int code = errno; /* "ERRNO:STEP: DESCRIPTION", as the C spawner's child writes it */
    int n = snprintf(buf, sizeof buf, "%d:%s%s%s: %s", code, what, detail ? " " : "",
                     detail ? detail : "", strerror(code));
    if (errfd >= 0 && n > 0)
        (void)!write(errfd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    _exit(127);
}

static long long number(const char *text, long long low, long long high) {
    char *end = NULL;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno != 0 || *text == '\0' || *end != '\0' || value < low || value > high) {
        errno = EINVAL;
        fail("bad argument", text);
    }
    return value;
}

static rlim_t limit(const char *text) {
    long long value = number(text, -1, 0x7fffffffffffffffLL);
    return value < 0 ? RLIM_INFINITY : (rlim_t)value;
}

static int compare(const void *a, const void *b) {
    return *(const int *)a - *(const int *)b;
}

/* Close every descriptor from ``low`` up, except the sorted ``keep``. */
static void close_others(int *keep, int count) {
    unsigned int from = 3;
    for (int i = 0; i <= count; i++) {
        unsigned int to = i < count ? (unsigned int)keep[i] : ~0U;
        if (to > from && syscall(SYS_close_range, from, to - 1, 0) != 0) {
            if (errno != ENOSYS)
                fail("close_range", NULL);
            long most = sysconf(_SC_OPEN_MAX);
            for (long fd = from; fd < (i < count ? (long)to : most); fd++)
                (void)close((int)fd);
        }
        if (i < count)
            from = to + 1;
    }
}

int main(int argc, char **argv) {
    int at = 1;
    if (argc < 9) {
        errno = EINVAL;
        fail("usage: helper ERRFD UID GID CWD NKEEP FD... NLIMITS (RES SOFT HARD)... -- PROGRAM",
             NULL);
    }
    errfd = (int)number(argv[at++], 3, MAX_FD);
    uid_t uid = (uid_t)number(argv[at++], 1, 0x7fffffff); /* never root */
    gid_t gid = (gid_t)number(argv[at++], 1, 0x7fffffff);
    const char *cwd = argv[at++];
    int nkeep = (int)number(argv[at++], 0, MAX_KEEP);
    int keep[MAX_KEEP + 1];
    if (at + nkeep >= argc) {
        errno = EINVAL;
        fail("bad argument", "NKEEP");
    }
    for (int i = 0; i < nkeep; i++)
        keep[i] = (int)number(argv[at++], 3, MAX_FD);
    keep[nkeep] = errfd;
    int nlimits = (int)number(argv[at++], 0, 16);
    if (at + 3 * nlimits >= argc) {
        errno = EINVAL;
        fail("bad argument", "NLIMITS");
    }
    int limits_at = at;
    at += 3 * nlimits;
    if (strcmp(argv[at++], "--") != 0 || at >= argc) {
        errno = EINVAL;
        fail("bad argument", "-- PROGRAM");
    }

    int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (adj < 0 || write(adj, "0", 1) != 1)
        fail("oom_score_adj", NULL);
    (void)close(adj);
    qsort(keep, (size_t)nkeep + 1, sizeof keep[0], compare);
    close_others(keep, nkeep + 1);
    for (int i = 0; i < nlimits; i++) {
        const char **spec = (const char **)&argv[limits_at + 3 * i];
        int which = (int)number(spec[0], 0, RLIM_NLIMITS - 1);
        struct rlimit value = {limit(spec[1]), limit(spec[2])};
        if (setrlimit(which, &value) != 0)
            fail("setrlimit", spec[0]);
    }
    if (chdir(cwd) != 0)
        fail("chdir", cwd);
    if (setgroups(0, NULL) != 0)
        fail("setgroups", NULL);
    if (setresgid(gid, gid, gid) != 0)
        fail("setresgid", NULL);
    if (setresuid(uid, uid, uid) != 0)
        fail("setresuid", NULL);
    if (getuid() == 0 || geteuid() == 0) {
        errno = EPERM;
        fail("still root", NULL);
    }
    if (fcntl(errfd, F_SETFD, FD_CLOEXEC) != 0)
        fail("fcntl", NULL);
    execvp(argv[at], &argv[at]);
    fail("exec", argv[at]);
    return 127;
}
