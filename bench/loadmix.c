/* loadmix: pipelined throughput of a read/write mix, the shape of the hardening load test.
 *
 *   loadmix [-n N] [-w EVERY] [-f FILES] DIR -- SERVER-ARGV...
 *
 * Writes DIR/read.txt (1 KB) and empties DIR/out, spawns the server (give it DIR read-write),
 * initializes it, then writes N tools/call requests (ids 1..N; default 10,000) without waiting,
 * non-blocking while the replies are read: every EVERY-th (default 4, so 25%) is a write_file
 * of DIR/out/w<K>.txt (with -f FILES, of one of FILES files, so writes of one file queue behind
 * each other), the rest read_file of DIR/read.txt. Times the first request written to the last
 * reply read and prints requests/s. Every reply must carry "result" and no "isError":true.
 *
 * C11 + POSIX, no dependencies:  cc -O2 -o loadmix bench/loadmix.c
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) {
    fprintf(stderr, "loadmix: %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
    exit(1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* DIR/out, created empty. */
static void empty_out(const char *out) {
    DIR *d = opendir(out);
    if (d) {
        struct dirent *e;
        char path[8192];
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
                continue;
            snprintf(path, sizeof path, "%s/%s", out, e->d_name);
            unlink(path);
        }
        closedir(d);
    } else if (mkdir(out, 0755) < 0) {
        die("mkdir DIR/out");
    }
}

int main(int argc, char **argv) {
    long n = 10000, every = 4, files = 0;
    int opt;
    while ((opt = getopt(argc, argv, "n:w:f:")) != -1) {
        if (opt == 'n') n = atol(optarg);
        else if (opt == 'w') every = atol(optarg);
        else if (opt == 'f') files = atol(optarg);
        else die("usage: loadmix [-n N] [-w EVERY] [-f FILES] DIR -- SERVER-ARGV...");
    }
    if (optind + 2 > argc || strcmp(argv[optind + 1], "--") || n < 1 || every < 1)
        die("usage: loadmix [-n N] [-w EVERY] [-f FILES] DIR -- SERVER-ARGV...");
    const char *dir = argv[optind];
    char **server = argv + optind + 2;
    if (!server[0]) die("no server command");

    char path[4096];
    snprintf(path, sizeof path, "%s/read.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f) die("writing DIR/read.txt");
    for (int i = 0; i < 16; i++) fprintf(f, "%063d\n", i);
    fclose(f);
    snprintf(path, sizeof path, "%s/out", dir);
    empty_out(path);

    /* The requests, ids 1..n. Paths are used as given: no quotes or backslashes in DIR. */
    size_t cap = (size_t)n * (300 + 2 * strlen(dir)), size = 0;
    char *req = malloc(cap);
    if (!req) die("malloc");
    for (long k = 1; k <= n; k++) {
        if (k % every == 0) {
            long file = files > 0 ? k % files : k;
            size += snprintf(req + size, cap - size,
                "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"write_file\",\"arguments\":{\"path\":\"%s/out/w%ld.txt\",\"content\":"
                "\"written %ld\\n\"}}}\n", k, dir, file, k);
        } else {
            size += snprintf(req + size, cap - size,
                "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"read_file\",\"arguments\":{\"path\":\"%s/read.txt\"}}}\n", k, dir);
        }
    }

    int in[2], out[2];
    if (pipe(in) || pipe(out)) die("pipe");
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execvp(server[0], server);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    const char *init =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"loadmix\",\"version\":"
        "\"1\"}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
    if (write(in[1], init, strlen(init)) < 0) die("writing initialize");
    size_t bufcap = 1 << 24, len = 0;
    char *buf = malloc(bufcap);
    if (!buf) die("malloc");
    for (;;) { /* the initialize reply */
        ssize_t r = read(out[0], buf + len, bufcap - len);
        if (r <= 0) die("no initialize reply");
        len += r;
        char *nl = memchr(buf, '\n', len);
        if (nl) {
            len -= nl + 1 - buf;
            memmove(buf, nl + 1, len);
            break;
        }
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    double start = now();
    long got = 0;
    size_t sent = 0;
    while (got < n) {
        struct pollfd p[2] = {{out[0], POLLIN, 0}, {in[1], sent < size ? POLLOUT : 0, 0}};
        if (poll(p, 2, 120000) <= 0) die("no progress in 120 s");
        if (p[1].revents & POLLOUT) {
            ssize_t w = write(in[1], req + sent, size - sent);
            if (w > 0) sent += w;
        }
        if (!(p[0].revents & (POLLIN | POLLHUP))) continue;
        if (len == bufcap) die("a reply line over 16 MiB");
        ssize_t r = read(out[0], buf + len, bufcap - len);
        if (r <= 0) die("the server closed stdout");
        len += r;
        char *line = buf, *nl;
        while ((nl = memchr(line, '\n', buf + len - line))) {
            *nl = 0;
            if (strstr(line, "\"id\"")) {
                if (!strstr(line, "\"result\"") || strstr(line, "\"isError\":true")) {
                    fprintf(stderr, "loadmix: a failed reply: %.300s\n", line);
                    exit(1);
                }
                got++;
            }
            line = nl + 1;
        }
        len = buf + len - line;
        memmove(buf, line, len);
    }
    double took = now() - start;
    printf("%ld requests (every %ld a write) in %.3f s: %.0f requests/s\n", n, every, took,
           n / took);
    close(in[1]);
    int status;
    waitpid(pid, &status, 0);
    return 0;
}
