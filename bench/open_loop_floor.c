// The least CPU an open loop can spend per request on this machine: one
// thread, N connections to a Redis server, each request sent at its time
// on a fixed schedule (the clients staggered as bakeoff staggers them), a
// timed sleep until each send time (timer slack 1 ns) and no other work:
// the replies are read, unparsed, at the connection's next send or at the
// end. Latency is not measured at all. bench/vs_peers.py runs it beside
// bakeoff in open loop: what bakeoff spends above it is bakeoff's, and what
// it spends against a closed loop is the machine's price of a wake-up.
//
//   open_loop_floor PORT RATE SECONDS [CONNECTIONS] [LEAD_NS]
//
// LEAD_NS (default 0) wakes that much before each send time and spins out
// the rest: the price of sending on time when wake-ups come late. Prints
// one line: requests, CPU per request, and how late the sends left (p50,
// p99), in µs.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long clock_ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return x < y ? -1 : x > y;
}

// Reads what has arrived on `fd` without waiting; exits if the server
// has closed it.
static void read_arrived(int fd) {
  static char buf[65536];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
  }
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
    fprintf(stderr, "open_loop_floor: the server closed a connection\n");
    exit(1);
  }
}

// Waits for every reply on `fd`: sends a PING and reads up to its PONG,
// which Redis answers after the requests before it.
static void read_all(int fd) {
  static char buf[65536];
  char tail[8] = {0};
  if (send(fd, "PING\r\n", 6, 0) != 6) {
    perror("open_loop_floor: send");
    exit(1);
  }
  while (strcmp(tail, "+PONG\r\n") != 0) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      fprintf(stderr, "open_loop_floor: the server closed a connection\n");
      exit(1);
    }
    size_t keep = n >= 7 ? 0 : 7 - n;
    memmove(tail, tail + 7 - keep, keep);
    memcpy(tail + keep, buf + n - (7 - keep), 7 - keep);
  }
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: open_loop_floor PORT RATE SECONDS [CONNECTIONS] [LEAD_NS]\n");
    return 2;
  }
  int port = atoi(argv[1]);
  long long rate = atoll(argv[2]), secs = atoll(argv[3]);
  int conns = argc > 4 ? atoi(argv[4]) : 50;
  long long lead = argc > 5 ? atoll(argv[5]) : 0;
  if (port <= 0 || rate <= 0 || secs <= 0 || conns <= 0 || lead < 0) {
    fprintf(stderr, "open_loop_floor: PORT, RATE, SECONDS and CONNECTIONS must be positive\n");
    return 2;
  }
  prctl(PR_SET_TIMERSLACK, 1UL);
  int *fd = calloc(conns, sizeof *fd);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < conns; i++) {
    int one = 1;
    fd[i] = socket(AF_INET, SOCK_STREAM, 0);
    if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)&a, sizeof a) != 0) {
      perror("open_loop_floor: connect");
      return 1;
    }
    setsockopt(fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  long long n = rate * secs, gap = 1000000000LL / rate;
  long long *lag = malloc(n * sizeof *lag);
  unsigned long long seed = 0x9e3779b97f4a7c15ULL;
  char req[64];
  long long t0 = clock_ns(CLOCK_MONOTONIC) + 1000000;
  for (long long i = 0; i < n; i++) {
    long long due = t0 + i * gap, wake = due - lead;
    if (clock_ns(CLOCK_MONOTONIC) < wake) {
      struct timespec ts = {wake / 1000000000LL, wake % 1000000000LL};
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    long long t;
    while ((t = clock_ns(CLOCK_MONOTONIC)) < due) {
    }
    lag[i] = t - due;
    int c = i % conns;
    read_arrived(fd[c]);
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    int len = snprintf(req, sizeof req, "*2\r\n$3\r\nGET\r\n$15\r\nbk:%012llu\r\n",
                       (seed >> 33) % 100000);
    if (send(fd[c], req, len, 0) != len) {
      perror("open_loop_floor: send");
      return 1;
    }
  }
  for (int c = 0; c < conns; c++) read_all(fd[c]);
  long long cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  qsort(lag, n, sizeof *lag, by_value);
  printf("requests %lld cpu_per_request_us %.2f lag_p50_us %.1f lag_p99_us %.1f\n", n,
         cpu / 1e3 / n, lag[n / 2] / 1e3, lag[n * 99 / 100] / 1e3);
  return 0;
}
