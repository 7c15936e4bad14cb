/*
 * A slower disk for the bench: adds SLOW_SYNC_US microseconds (default 2000)
 * to every fsync and fdatasync of the process it is preloaded into, as a
 * network block device's sync would take. Used to compare builds on what a
 * sync costs them (docs/performance.md, fourth pass):
 *
 *   gcc -shared -fPIC -O2 -o /tmp/slow-sync.so bench/slow-sync/slow-sync.c -ldl
 *   BENCH_SERVER_ENV="LD_PRELOAD=/tmp/slow-sync.so,SLOW_SYNC_US=2000" node bench/run.mjs
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

static int delay_us(void) {
  const char *v = getenv("SLOW_SYNC_US");
  return v ? atoi(v) : 2000;
}

int fsync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  usleep(delay_us());
  return real(fd);
}

int fdatasync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  usleep(delay_us());
  return real(fd);
}
