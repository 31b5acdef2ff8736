/* mcpclient: a tiny stdio MCP client for bench/bench.py's latency rows.
 *
 * The Python client's own per-call cost (JSON encode/decode, pipe reads) is larger than a small
 * read_file call on a fast server, so the sequential, pipelined, spawn and cold-start rows are
 * timed with this client instead. It parses no JSON: replies are split on '\n' and checked by substring.
 *
 *   mcpclient [-w WARMUP] [-b BATCHES] MODE N TOOL PATH -- SERVER-ARGV...
 *
 *   spawn  N times (after WARMUP untimed ones): fork/exec the server, write `initialize`, time
 *          from just before fork() to the newline of the first reply line, close its stdin and
 *          wait for it. Prints one sample (µs) per line. TOOL and PATH are ignored.
 *   cold   N times (after WARMUP untimed ones): a client's whole short session. fork/exec the
 *          server, `initialize` (waiting for the reply), `notifications/initialized` and
 *          `tools/list` (waiting for a reply that lists tools), close its stdin, read its stdout to
 *          EOF and reap it. Times from just before fork() to waitpid()'s return; the server must
 *          exit 0. Prints one sample (µs) per line. TOOL and PATH are ignored.
 *   seq    spawn once, initialize + notifications/initialized, WARMUP untimed calls, then N
 *          tools/call {name: TOOL, arguments: {path: PATH}} one at a time. Prints each round
 *          trip (µs, from before write() to the reply's newline). Each reply must carry the
 *          request's id and "result" and must not say "isError":true.
 *   pipe   spawn once, initialize, then WARMUP untimed + BATCHES (default 5) timed batches: all
 *          N requests written as one buffer (non-blocking writes with poll, so a full pipe
 *          cannot deadlock) while N reply lines are read. Prints each batch's total µs.
 *
 * Exit status 0 on success; on any failure a message goes to stderr and the status is 1.
 * C11 + POSIX, no dependencies:  cc -O2 -o mcpclient bench/mcpclient.c
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 300000 /* per wait for data; matches bench.py's CALL_TIMEOUT */

static const char *INIT_REQ =
    "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}\n";
static const char *INITIALIZED = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

static pid_t g_child = -1;

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("mcpclient: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (g_child > 0) {
        kill(g_child, SIGKILL);
        waitpid(g_child, NULL, 0);
    }
    exit(1);
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* ---- server process and line reader ---------------------------------------------------- */

typedef struct {
    pid_t pid;
    int in_fd;  /* server's stdin (we write) */
    int out_fd; /* server's stdout (we read) */
    char *buf;
    size_t cap, start, end; /* unread bytes are buf[start..end) */
} Server;

static void spawn_server(Server *s, char **argv) {
    int in[2], out[2];
    if (pipe(in) < 0 || pipe(out) < 0) die("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 2);
        close(in[0]); close(in[1]); close(out[0]); close(out[1]);
        if (devnull > 2) close(devnull);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    fcntl(in[1], F_SETFD, FD_CLOEXEC);
    fcntl(out[0], F_SETFD, FD_CLOEXEC);
    s->pid = pid;
    g_child = pid;
    s->in_fd = in[1];
    s->out_fd = out[0];
    if (!s->buf) {
        s->cap = 1 << 20;
        s->buf = malloc(s->cap);
        if (!s->buf) die("out of memory");
    }
    s->start = s->end = 0;
}

static void close_server(Server *s) {
    if (s->in_fd >= 0) close(s->in_fd);
    s->in_fd = -1;
    /* the server should exit on stdin EOF; kill it if it has not after 10 s */
    int st;
    struct timespec ms = {0, 1000000};
    for (int i = 0; waitpid(s->pid, &st, WNOHANG) == 0; i++) {
        if (i == 10000) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &st, 0);
            break;
        }
        nanosleep(&ms, NULL);
    }
    close(s->out_fd);
    s->out_fd = -1;
    g_child = -1;
}

static void write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            die("write to server: %s", strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Read more bytes into the buffer (blocking up to TIMEOUT_MS). */
static void fill(Server *s) {
    if (s->start == s->end) s->start = s->end = 0;
    if (s->end == s->cap) {
        if (s->start > 0) {
            memmove(s->buf, s->buf + s->start, s->end - s->start);
            s->end -= s->start;
            s->start = 0;
        } else {
            s->cap *= 2;
            s->buf = realloc(s->buf, s->cap);
            if (!s->buf) die("out of memory");
        }
    }
    struct pollfd p = {.fd = s->out_fd, .events = POLLIN};
    int r;
    do r = poll(&p, 1, TIMEOUT_MS); while (r < 0 && errno == EINTR);
    if (r == 0) die("no reply from the server in %d s", TIMEOUT_MS / 1000);
    ssize_t n = read(s->out_fd, s->buf + s->end, s->cap - s->end);
    if (n < 0 && errno != EINTR) die("read from server: %s", strerror(errno));
    if (n == 0) die("server closed stdout");
    if (n > 0) s->end += (size_t)n;
}

/* Return the next complete line (NUL-terminated in place, without '\n') if one is buffered. */
static char *take_line(Server *s, size_t *len) {
    char *nl = memchr(s->buf + s->start, '\n', s->end - s->start);
    if (!nl) return NULL;
    char *line = s->buf + s->start;
    *nl = 0;
    *len = (size_t)(nl - line);
    s->start = (size_t)(nl - s->buf) + 1;
    return line;
}

static char *read_line(Server *s, size_t *len) {
    char *l;
    while (!(l = take_line(s, len))) fill(s);
    return l;
}

/* ---- reply checks ------------------------------------------------------------------------ */

/* True if `line` is a notification or a request from the server (has "method"), not a reply. */
static int is_server_message(const char *line) {
    return strstr(line, "\"method\"") != NULL && strstr(line, "\"result\"") == NULL &&
           strstr(line, "\"error\"") == NULL;
}

/* Does `line` carry "id":K (as a key, not inside an escaped string)? */
static int has_id(const char *line, long k) {
    const char *p = line;
    while ((p = strstr(p, "\"id\":"))) {
        p += 5;
        while (*p == ' ') p++;
        char *e;
        long v = strtol(p, &e, 10);
        if (e != p && v == k) return 1;
    }
    return 0;
}

static void check_ok(const char *line, const char *what) {
    if (!strstr(line, "\"result\"") || strstr(line, "\"isError\":true"))
        die("%s failed: %.300s", what, line);
}

/* Read lines until the reply carrying id k (skipping server notifications). */
static char *read_reply(Server *s, long k, const char *what) {
    for (;;) {
        size_t len;
        char *l = read_line(s, &len);
        if (len == 0 || is_server_message(l)) continue;
        if (!has_id(l, k)) die("%s: unexpected line (wanted id %ld): %.300s", what, k, l);
        check_ok(l, what);
        return l;
    }
}

static void initialize(Server *s) {
    write_all(s->in_fd, INIT_REQ, strlen(INIT_REQ));
    read_reply(s, 0, "initialize");
    write_all(s->in_fd, INITIALIZED, strlen(INITIALIZED));
}

/* ---- requests ---------------------------------------------------------------------------- */

static char *g_args_json; /* {"name":TOOL,"arguments":{"path":PATH}}, PATH JSON-escaped */

static char *json_escape(const char *s) {
    size_t n = strlen(s);
    char *o = malloc(n * 6 + 1), *q = o;
    if (!o) die("out of memory");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { *q++ = '\\'; *q++ = (char)c; }
        else if (c < 0x20) q += sprintf(q, "\\u%04x", c);
        else *q++ = (char)c;
    }
    *q = 0;
    return o;
}

static int format_call(char *dst, size_t cap, long id) {
    int n = snprintf(dst, cap, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":%s}\n",
                     id, g_args_json);
    if (n < 0 || (size_t)n >= cap) die("request too long");
    return n;
}

/* ---- modes ------------------------------------------------------------------------------- */

static void mode_spawn(char **argv, long n, long warm) {
    Server s = {0};
    for (long i = 0; i < warm + n; i++) {
        double t0 = now_us();
        spawn_server(&s, argv);
        write_all(s.in_fd, INIT_REQ, strlen(INIT_REQ));
        size_t len;
        char *l;
        for (;;) { /* first complete reply line */
            l = read_line(&s, &len);
            if (len && !is_server_message(l)) break;
        }
        double t1 = now_us();
        if (!has_id(l, 0)) die("initialize: unexpected line: %.300s", l);
        check_ok(l, "initialize");
        close_server(&s);
        if (i >= warm) printf("%.1f\n", t1 - t0);
    }
}

static const char *TOOLS_LIST = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n";

static void mode_cold(char **argv, long n, long warm) {
    Server s = {0};
    char sink[65536];
    for (long i = 0; i < warm + n; i++) {
        double t0 = now_us();
        spawn_server(&s, argv);
        initialize(&s);
        write_all(s.in_fd, TOOLS_LIST, strlen(TOOLS_LIST));
        char *l = read_reply(&s, 1, "tools/list");
        if (!strstr(l, "\"tools\"") || !strstr(l, "\"inputSchema\""))
            die("tools/list: no tools in the reply: %.300s", l);
        close(s.in_fd);
        s.in_fd = -1;
        for (;;) { /* what is left of stdout, up to EOF: the server is exiting */
            struct pollfd p = {.fd = s.out_fd, .events = POLLIN};
            int r;
            do r = poll(&p, 1, TIMEOUT_MS); while (r < 0 && errno == EINTR);
            if (r == 0) die("the server did not exit within %d s of stdin closing", TIMEOUT_MS / 1000);
            ssize_t got = read(s.out_fd, sink, sizeof sink);
            if (got == 0) break;
            if (got < 0 && errno != EINTR) die("read from server: %s", strerror(errno));
        }
        int st;
        while (waitpid(s.pid, &st, 0) < 0)
            if (errno != EINTR) die("waitpid: %s", strerror(errno));
        double t1 = now_us();
        close(s.out_fd);
        s.out_fd = -1;
        g_child = -1;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) die("the server exited with status 0x%x", st);
        if (i >= warm) printf("%.1f\n", t1 - t0);
    }
}

static void mode_seq(char **argv, long n, long warm) {
    Server s = {0};
    spawn_server(&s, argv);
    initialize(&s);
    char req[65536];
    for (long i = 0; i < warm + n; i++) {
        long id = i + 1;
        int len = format_call(req, sizeof req, id);
        double t0 = now_us();
        write_all(s.in_fd, req, (size_t)len);
        read_reply(&s, id, "tools/call");
        double t1 = now_us();
        if (i >= warm) printf("%.2f\n", t1 - t0);
    }
    close_server(&s);
}

static void mode_pipe(char **argv, long n, long warm, long batches) {
    Server s = {0};
    spawn_server(&s, argv);
    initialize(&s);
    size_t one = strlen(g_args_json) + 128;
    char *out = malloc(one * (size_t)n);
    unsigned char *seen = malloc((size_t)n);
    if (!out || !seen) die("out of memory");
    int fl = fcntl(s.in_fd, F_GETFL);
    long next_id = 1;
    for (long b = 0; b < warm + batches; b++) {
        long base = next_id;
        size_t total = 0;
        for (long i = 0; i < n; i++) total += (size_t)format_call(out + total, one, next_id++);
        memset(seen, 0, (size_t)n);
        fcntl(s.in_fd, F_SETFL, fl | O_NONBLOCK);
        size_t written = 0;
        long got = 0;
        double t0 = now_us(), t1 = t0;
        while (got < n) {
            size_t len;
            char *l;
            while (got < n && (l = take_line(&s, &len))) {
                if (len == 0 || is_server_message(l)) continue;
                check_ok(l, "pipelined tools/call");
                /* mark the id (replies may come in any order) */
                const char *p = l;
                int marked = 0;
                while (!marked && (p = strstr(p, "\"id\":"))) {
                    p += 5;
                    while (*p == ' ') p++;
                    long v = strtol(p, NULL, 10);
                    if (v >= base && v < base + n && !seen[v - base]) seen[v - base] = marked = 1;
                }
                if (!marked) die("pipelined reply with an unknown or repeated id: %.300s", l);
                if (++got == n) t1 = now_us();
            }
            if (got == n) break;
            struct pollfd p[2] = {{.fd = s.out_fd, .events = POLLIN}, {.fd = s.in_fd, .events = POLLOUT}};
            int np = written < total ? 2 : 1;
            int r;
            do r = poll(p, (nfds_t)np, TIMEOUT_MS); while (r < 0 && errno == EINTR);
            if (r == 0) die("pipelined batch: no progress in %d s (%ld of %ld replies)",
                            TIMEOUT_MS / 1000, got, n);
            if (np == 2 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
                ssize_t w = write(s.in_fd, out + written, total - written);
                if (w < 0 && errno != EAGAIN && errno != EINTR) die("write to server: %s", strerror(errno));
                if (w > 0) written += (size_t)w;
            }
            if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) fill(&s);
        }
        fcntl(s.in_fd, F_SETFL, fl);
        if (written < total) die("server answered before all requests were written");
        if (b >= warm) printf("%.1f\n", t1 - t0);
        fflush(stdout);
    }
    free(out);
    free(seen);
    close_server(&s);
}

static void usage(void) {
    fprintf(stderr, "usage: mcpclient [-w WARMUP] [-b BATCHES] spawn|cold|seq|pipe N TOOL PATH -- SERVER-ARGV...\n");
    exit(2);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    long warm = 0, batches = 5;
    int i = 1;
    while (i < argc && argv[i][0] == '-' && argv[i][1] && strcmp(argv[i], "--")) {
        if (i + 1 >= argc) usage();
        if (!strcmp(argv[i], "-w")) warm = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-b")) batches = atol(argv[i + 1]);
        else usage();
        i += 2;
    }
    if (argc - i < 6 || strcmp(argv[i + 4], "--")) usage();
    const char *mode = argv[i];
    long n = atol(argv[i + 1]);
    const char *tool = argv[i + 2], *path = argv[i + 3];
    char **server = argv + i + 5;
    if (n <= 0 || warm < 0 || batches <= 0) usage();

    char *et = json_escape(tool), *ep = json_escape(path);
    size_t cap = strlen(et) + strlen(ep) + 64;
    g_args_json = malloc(cap);
    if (!g_args_json) die("out of memory");
    snprintf(g_args_json, cap, "{\"name\":\"%s\",\"arguments\":{\"path\":\"%s\"}}", et, ep);

    if (!strcmp(mode, "spawn")) mode_spawn(server, n, warm);
    else if (!strcmp(mode, "cold")) mode_cold(server, n, warm);
    else if (!strcmp(mode, "seq")) mode_seq(server, n, warm);
    else if (!strcmp(mode, "pipe")) mode_pipe(server, n, warm, batches);
    else usage();
    return fflush(stdout) == 0 ? 0 : 1;
}
