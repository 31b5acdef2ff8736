/* fsyncrate: how many durable atomic writes per second a directory's disk takes, with no server
 * in the way: the ceiling under loadmix's write_file share.
 *
 *   fsyncrate [-n N] [-t THREADS] [-c] DIR
 *
 * THREADS threads (default 1) share N writes (default 2,500: the writes among loadmix's 10,000
 * requests). Each write is what replay's atomic_write does: create DIR/.fsyncrate.<k> (O_EXCL),
 * write 16 bytes, fsync it, rename it to DIR/w<k>.txt, fsync DIR. Prints writes/s and the mean
 * time one write took. DIR must exist; the w<k>.txt files are removed at the end.
 *
 * -c coalesces the directory fsyncs (group commit): a writer whose rename an fsync of DIR
 * started after it already covers waits for that one instead of starting its own. It prints
 * how many fsyncs of DIR ran. (On ext4 it made no difference: the journal already commits
 * concurrent fsyncs together. See docs/benchmarks.md.)
 *
 * C11 + POSIX threads, no dependencies:  cc -O2 -pthread -o fsyncrate bench/fsyncrate.c
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long n = 2500, threads = 1, coalesce = 0;
static int dir_fd;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t synced = PTHREAD_COND_INITIALIZER;
/* Under `lock`: renames asking for an fsync of DIR, renames covered by one that ended, whether
 * one runs, and how many ran. */
static unsigned long asked, covered, running, dir_syncs;

static void die(const char *what) {
    fprintf(stderr, "fsyncrate: %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
    exit(1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Makes this writer's rename durable: an fsync of DIR, or with -c one that started after it. */
static void sync_dir(void) {
    pthread_mutex_lock(&lock);
    unsigned long ticket = ++asked;
    while (covered < ticket) {
        if (coalesce && running) {
            pthread_cond_wait(&synced, &lock);
            continue;
        }
        running++;
        unsigned long upto = asked;
        pthread_mutex_unlock(&lock);
        if (fsync(dir_fd)) die("fsync DIR");
        pthread_mutex_lock(&lock);
        running--;
        dir_syncs++;
        if (!coalesce) break;
        if (upto > covered) covered = upto;
        pthread_cond_broadcast(&synced);
    }
    pthread_mutex_unlock(&lock);
}

static void *writer(void *arg) {
    char tmp[64], name[64];
    for (long k = (long)arg; k < n; k += threads) {
        snprintf(tmp, sizeof tmp, ".fsyncrate.%ld", k);
        snprintf(name, sizeof name, "w%ld.txt", k);
        int fd = openat(dir_fd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0) die("create");
        if (write(fd, "written 1234567\n", 16) != 16) die("write");
        if (fsync(fd)) die("fsync");
        if (renameat(dir_fd, tmp, dir_fd, name)) die("rename");
        close(fd);
        sync_dir();
    }
    return NULL;
}

int main(int argc, char **argv) {
    int opt;
    while ((opt = getopt(argc, argv, "n:t:c")) != -1) {
        if (opt == 'c') {
            coalesce = 1;
            continue;
        }
        if (opt == 'n') n = atol(optarg);
        else if (opt == 't') threads = atol(optarg);
        else die("usage: fsyncrate [-n N] [-t THREADS] [-c] DIR");
    }
    if (optind + 1 != argc || n < 1 || threads < 1 || threads > 1024)
        die("usage: fsyncrate [-n N] [-t THREADS] [-c] DIR");
    dir_fd = open(argv[optind], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) die("open DIR");
    pthread_t tid[1024];
    double start = now();
    for (long i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, writer, (void *)i)) die("pthread_create");
    for (long i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    double took = now() - start;
    printf("%ld writes, %ld threads: %.3f s, %.0f writes/s, %.2f ms per write\n", n, threads, took,
           n / took, took / n * threads * 1e3);
    printf("%lu fsyncs of DIR\n", dir_syncs);
    char name[64];
    for (long k = 0; k < n; k++) {
        snprintf(name, sizeof name, "w%ld.txt", k);
        unlinkat(dir_fd, name, 0);
    }
    return 0;
}
