/*
 * A small JSON tree parser for the C spawner's requests (the harness's json.dumps),
 * included once by _spawner.c (one translation unit: the build compiles that file).
 *
 * parse_value builds a tree of nodes (objects keep their keys in order; field finds
 * the last one of a name, as Python's json does); release frees it. Strings are
 * decoded to bytes: \uXXXX to UTF-8, a surrogate pair to its code point, and a lone
 * \udc80-\udcff to the byte it escapes (Python's surrogateescape); any other lone
 * surrogate is refused, as Python's encoding of it would be. Integers that fit in a
 * long long are J_INT; any other number is J_NUMBER (never a valid request field).
 * Nesting is limited to MAX_DEPTH; every error leaves a message in parser.error.
 */
#ifndef TOOLPROOF_SPAWNER_JSON_H
#define TOOLPROOF_SPAWNER_JSON_H

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 32

enum kind { J_NULL, J_BOOL, J_INT, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT };

typedef struct node {
    enum kind kind;
    long long integer;
    char *text; /* J_STRING: decoded bytes, NUL-terminated */
    size_t length;
    struct node **items; /* J_ARRAY and J_OBJECT values */
    char **keys;         /* J_OBJECT keys */
    size_t count, room;
} node;

typedef struct {
    const unsigned char *at, *end;
    const char *error;
} parser;

static void release(node *value) {
    if (value == NULL)
        return;
    for (size_t i = 0; i < value->count; i++) {
        release(value->items[i]);
        if (value->keys != NULL)
            free(value->keys[i]);
    }
    free(value->items);
    free(value->keys);
    free(value->text);
    free(value);
}

static void skip_space(parser *p) {
    while (p->at < p->end && (*p->at == ' ' || *p->at == '\t' || *p->at == '\n' || *p->at == '\r'))
        p->at++;
}

static int hex4(parser *p, unsigned *out) {
    if (p->end - p->at < 4)
        return 0;
    unsigned value = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p->at[i];
        value <<= 4;
        if (c >= '0' && c <= '9')
            value |= c - '0';
        else if (c >= 'a' && c <= 'f')
            value |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            value |= c - 'A' + 10;
        else
            return 0;
    }
    p->at += 4;
    *out = value;
    return 1;
}

static size_t put_utf8(char *out, unsigned code) {
    if (code < 0x80) {
        out[0] = (char)code;
        return 1;
    }
    if (code < 0x800) {
        out[0] = (char)(0xc0 | code >> 6);
        out[1] = (char)(0x80 | (code & 0x3f));
        return 2;
    }
    if (code < 0x10000) {
        out[0] = (char)(0xe0 | code >> 12);
        out[1] = (char)(0x80 | (code >> 6 & 0x3f));
        out[2] = (char)(0x80 | (code & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | code >> 18);
    out[1] = (char)(0x80 | (code >> 12 & 0x3f));
    out[2] = (char)(0x80 | (code >> 6 & 0x3f));
    out[3] = (char)(0x80 | (code & 0x3f));
    return 4;
}

/* A string after its opening quote. A lone \udc80-\udcff is the byte it escapes (what
 * Python's surrogateescape makes of an undecodable byte); any other lone surrogate is
 * refused, as Python's encoding of it would be. */
static char *parse_text(parser *p, size_t *length) {
    const unsigned char *close = p->at; /* decoded, a string is never longer than written */
    while (close < p->end && *close != '"')
        close += *close == '\\' && close + 1 < p->end ? 2 : 1;
    char *out = malloc((size_t)(close - p->at) + 1);
    size_t n = 0;
    if (out == NULL) {
        p->error = "out of memory";
        return NULL;
    }
    while (p->at < p->end) {
        unsigned char c = *p->at++;
        if (c == '"') {
            out[n] = '\0';
            *length = n;
            return out;
        }
        if (c < 0x20)
            break;
        if (c != '\\') {
            out[n++] = (char)c;
            continue;
        }
        if (p->at >= p->end)
            break;
        c = *p->at++;
        const char *simple = strchr("\"\\/bfnrt", c);
        if (c != 0 && simple != NULL) {
            out[n++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            continue;
        }
        unsigned code;
        if (c != 'u' || !hex4(p, &code))
            break;
        if (code >= 0xd800 && code < 0xdc00 && p->end - p->at >= 6 && p->at[0] == '\\' &&
            p->at[1] == 'u') {
            const unsigned char *back = p->at;
            unsigned low;
            p->at += 2;
            if (hex4(p, &low) && low >= 0xdc00 && low < 0xe000) {
                n += put_utf8(out + n, 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00));
                continue;
            }
            p->at = back;
        }
        if (code >= 0xdc80 && code <= 0xdcff) {
            out[n++] = (char)(code - 0xdc00);
            continue;
        }
        if (code >= 0xd800 && code < 0xe000) {
            free(out);
            p->error = "a lone surrogate in a string";
            return NULL;
        }
        n += put_utf8(out + n, code);
    }
    free(out);
    p->error = "an unterminated or invalid string";
    return NULL;
}

static int append(parser *p, node *parent, node *child, char *key) {
    if (parent->count == parent->room) {
        size_t room = parent->room ? parent->room * 2 : 8;
        node **items = realloc(parent->items, room * sizeof *items);
        if (items == NULL)
            goto fail;
        parent->items = items;
        if (parent->kind == J_OBJECT) {
            char **keys = realloc(parent->keys, room * sizeof *keys);
            if (keys == NULL)
                goto fail;
            parent->keys = keys;
        }
        parent->room = room;
    }
    parent->items[parent->count] = child;
    if (parent->kind == J_OBJECT)
        parent->keys[parent->count] = key;
    parent->count++;
    return 1;
fail:
    release(child);
    free(key);
    p->error = "out of memory";
    return 0;
}

static node *parse_value(parser *p, int depth);

static node *parse_container(parser *p, node *value, int depth) {
    char close = value->kind == J_ARRAY ? ']' : '}';
    skip_space(p);
    if (p->at < p->end && *p->at == close) {
        p->at++;
        return value;
    }
    for (;;) {
        char *key = NULL;
        skip_space(p);
        if (value->kind == J_OBJECT) {
            size_t length;
            if (p->at >= p->end || *p->at != '"') {
                p->error = "an object key must be a string";
                goto fail;
            }
            p->at++;
            key = parse_text(p, &length);
            if (key == NULL)
                goto fail;
            if (strlen(key) != length) { /* "A\u0000B" would be cut short to "A" */
                free(key);
                p->error = "an object key with a NUL byte";
                goto fail;
            }
            skip_space(p);
            if (p->at >= p->end || *p->at != ':') {
                free(key);
                p->error = "':' expected";
                goto fail;
            }
            p->at++;
        }
        node *item = parse_value(p, depth + 1);
        if (item == NULL) {
            free(key);
            goto fail;
        }
        if (!append(p, value, item, key))
            goto fail;
        skip_space(p);
        if (p->at < p->end && *p->at == ',') {
            p->at++;
            continue;
        }
        if (p->at < p->end && *p->at == close) {
            p->at++;
            return value;
        }
        p->error = "',' or a closing bracket expected";
        goto fail;
    }
fail:
    release(value);
    return NULL;
}

static node *parse_value(parser *p, int depth) {
    if (depth > MAX_DEPTH) {
        p->error = "nested too deeply";
        return NULL;
    }
    skip_space(p);
    if (p->at >= p->end) {
        p->error = "a value expected";
        return NULL;
    }
    node *value = calloc(1, sizeof *value);
    if (value == NULL) {
        p->error = "out of memory";
        return NULL;
    }
    unsigned char c = *p->at;
    static const struct {
        const char *word;
        enum kind kind;
    } words[] = {{"null", J_NULL}, {"true", J_BOOL}, {"false", J_BOOL}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t length = strlen(words[i].word);
        if ((size_t)(p->end - p->at) >= length && memcmp(p->at, words[i].word, length) == 0) {
            p->at += length;
            value->kind = words[i].kind;
            return value;
        }
    }
    if (c == '"') {
        p->at++;
        value->kind = J_STRING;
        value->text = parse_text(p, &value->length);
        if (value->text == NULL) {
            free(value);
            return NULL;
        }
        return value;
    }
    if (c == '[' || c == '{') {
        p->at++;
        value->kind = c == '[' ? J_ARRAY : J_OBJECT;
        return parse_container(p, value, depth);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        const unsigned char *start = p->at;
        int negative = c == '-', digits = 0, whole = 1, overflow = 0;
        unsigned long long magnitude = 0;
        if (negative)
            p->at++;
        while (p->at < p->end && *p->at >= '0' && *p->at <= '9') {
            unsigned digit = *p->at++ - '0';
            if (magnitude > (ULLONG_MAX - digit) / 10)
                overflow = 1;
            else
                magnitude = magnitude * 10 + digit;
            digits++;
        }
        if (digits == 0 || (digits > 1 && start[negative] == '0')) {
            free(value);
            p->error = "an invalid number";
            return NULL;
        }
        if (p->at < p->end && *p->at == '.') {
            whole = 0;
            p->at++;
            if (p->at >= p->end || *p->at < '0' || *p->at > '9') {
                free(value);
                p->error = "an invalid number";
                return NULL;
            }
            while (p->at < p->end && *p->at >= '0' && *p->at <= '9')
                p->at++;
        }
        if (p->at < p->end && (*p->at == 'e' || *p->at == 'E')) {
            whole = 0;
            p->at++;
            if (p->at < p->end && (*p->at == '+' || *p->at == '-'))
                p->at++;
            if (p->at >= p->end || *p->at < '0' || *p->at > '9') {
                free(value);
                p->error = "an invalid number";
                return NULL;
            }
            while (p->at < p->end && *p->at >= '0' && *p->at <= '9')
                p->at++;
        }
        unsigned long long limit = negative ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;
        if (!whole || overflow || magnitude > limit) {
            value->kind = J_NUMBER; /* never a valid field of a request */
            return value;
        }
        value->kind = J_INT;
        value->integer = negative ? (long long)(0 - magnitude) : (long long)magnitude;
        return value;
    }
    free(value);
    p->error = "a value expected";
    return NULL;
}

static node *field(const node *object, const char *key) {
    node *found = NULL; /* check() refuses a request that repeats one */
    for (size_t i = 0; i < object->count; i++)
        if (strcmp(object->keys[i], key) == 0)
            found = object->items[i];
    return found;
}

#endif
