// SPDX-License-Identifier: MIT
// memreport live: follows a capture while its program writes it, as memray's live mode
// does: a terminal screen redrawn every --interval until q, Ctrl-C or the program's exit,
// then a last snapshot as plain text. Without a terminal (or with --once) it prints one
// snapshot and exits. Reads only (model/live.h): the capture is never written.
#include "cmd.h"
#include "live.h"
#include "live_view.h"
#include "messages.h"
#include "opts.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static const char live_help[] =
    "usage: memreport live CAPTURE [--interval SECONDS] [--top N] [--once] [--full-names]\n"
    "Follows a capture while its program is still running (the tracer commits every\n"
    "MEMTRACE_COMMIT_MS): the heap's live bytes now and its peak so far, RSS and VSZ,\n"
    "events so far and their rate, the top sites by live bytes (labelled as stats labels\n"
    "them: past allocation wrappers and the C++ standard library) and a plot of the heap\n"
    "over the last minutes (one column per interval). On a terminal the screen is\n"
    "redrawn every interval until q or Ctrl-C, or until the program exits (the capture\n"
    "is complete); then one last snapshot is printed as plain text. Without a terminal,\n"
    "or with --once, one snapshot is printed and memreport exits. Each refresh reads only\n"
    "what was written since the last one. The capture is only read, never written: its\n"
    "frames are named from the program's binaries in memreport's memory meanwhile.\n"
    "  --interval S   seconds between refreshes (default 1; 0.1 to 3600)\n"
    "  --top N        site rows to show (default 10)\n"
    "  --once         print one snapshot and exit, even on a terminal\n"
    "  --full-names   C++ names as demangled (default: std::string, <...>)\n";

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) {
    stop_signal = sig;
}

typedef struct live_args {
    const char* path;
    double interval;
    size_t top;
    bool once;
} live_args;

static int parse_args(int argc, char** argv, live_args* a) {
    static const struct option opts[] = {{"interval", required_argument, NULL, 'i'},
                                         {"top", required_argument, NULL, 't'},
                                         {"once", no_argument, NULL, '1'},
                                         {"full-names", no_argument, NULL, MR_OPT_FULL_NAMES},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    mr_opts opt = MR_OPTS_INIT;
    *a = (live_args){.interval = 1, .top = 10};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        char* end;
        if (c == 'i') {
            a->interval = strtod(optarg, &end);
            if (end == optarg || *end || !(a->interval >= 0.1 && a->interval <= 3600))
                return mr_opts_usage_error(live_help, "--interval: '%s' is not 0.1 to 3600 seconds",
                                           optarg);
        } else if (c == 't') {
            if (mr_opts_parse_top(optarg, live_help, &a->top))
                return MR_EXIT_USAGE;
        } else if (c == '1') {
            a->once = true;
        } else {
            int orc = mr_opts_handle(&opt, c, live_help);
            if (orc != MR_OPT_NEXT)
                return orc;
        }
    }
    a->path = mr_opts_input(argc, argv, live_help);
    return a->path ? MR_OPT_NEXT : MR_EXIT_USAGE;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int update(mr_live* l, const char* path, bool all) {
    char err[512];
    int rc = mr_live_update(l, path, all, err, sizeof err);
    if (rc == 0)
        return 0;
    mr_messages_error(path, "%s", err);
    return rc == -EPROTO || rc == -ENOTSUP || rc == -EISDIR ? MR_EXIT_BAD_INPUT : MR_EXIT_IO;
}

static void snapshot(mr_live* l, const live_args* a) {
    double secs = (double)l->now_ns / 1e9;
    mr_live_view v = {.path = a->path,
                      .columns = 80,
                      .top = a->top,
                      .events_rate = secs > 0 ? (double)l->heap.events / secs : -1};
    mr_live_view_write(stdout, l, &v);
}

// The terminal as it was, restored on every way out.
static struct termios saved_tty;

static void enter_screen(void) {
    struct termios raw = saved_tty;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO); // keys one by one, unechoed; ISIG kept
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
    fputs("\033[?1049h\033[?25l\033[2J", stdout); // alternate screen, cursor hidden
    fflush(stdout);
}

static void leave_screen(void) {
    fputs("\033[?25h\033[?1049l", stdout);
    fflush(stdout);
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
}

// Waits up to `seconds` for a key; true when it was q (or the input ended).
static bool wait_for_quit(double seconds) {
    double until = now_s() + seconds;
    for (double left; !stop_signal && (left = until - now_s()) > 0;) {
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        int r = poll(&p, 1, (int)ceil(left * 1000));
        if (r <= 0)
            continue; // timeout, or a signal (checked by the loop)
        char key;
        ssize_t got = read(STDIN_FILENO, &key, 1);
        if (got == 0 || (got == 1 && (key == 'q' || key == 'Q')))
            return true;
    }
    return stop_signal != 0;
}

static int interactive(mr_live* l, const live_args* a) {
    struct sigaction sa = {.sa_handler = on_signal}; // no SA_RESTART: poll returns
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    enter_screen();
    double last_t = now_s();
    uint64_t last_events = l->heap.events;
    char footer[600] = "";
    int rc = 0;
    for (;;) {
        struct winsize ws = {0};
        ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
        double t = now_s();
        mr_live_view v = {.path = a->path,
                          .ansi = true,
                          .columns = ws.ws_col ? ws.ws_col : 80,
                          .rows = ws.ws_row ? ws.ws_row : 24,
                          .top = a->top,
                          .events_rate = t > last_t && l->updates > 1
                                             ? (double)(l->heap.events - last_events) / (t - last_t)
                                             : -1,
                          .footer = footer[0] ? footer : "q: quit"};
        mr_live_view_write(stdout, l, &v);
        if (l->complete || wait_for_quit(a->interval))
            break;
        last_t = t;
        last_events = l->heap.events;
        char err[512];
        int urc = mr_live_update(l, a->path, false, err, sizeof err);
        // A refresh that fails (the file gone, the tracer busy) is said; the next retries.
        snprintf(footer, sizeof footer, "%s%s", urc ? err : "", urc ? "  (q: quit)" : "");
    }
    leave_screen();
    if (stop_signal == SIGTERM || stop_signal == SIGHUP)
        rc = 128 + stop_signal;
    return rc;
}

int mr_cmd_live(int argc, char** argv) {
    live_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != MR_OPT_NEXT)
        return rc;
    mr_live l;
    if (mr_live_init(&l, (int64_t)(a.interval * 1e9))) {
        mr_messages_error(a.path, "out of memory");
        return MR_EXIT_IO;
    }
    bool tty =
        isatty(STDOUT_FILENO) && isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_tty) == 0;
    rc = update(&l, a.path, a.once || !tty);
    if (!rc && tty && !a.once) {
        rc = interactive(&l, &a);
        // The last snapshot, with every event read so far applied.
        if (!rc && update(&l, a.path, true) == 0)
            snapshot(&l, &a);
    } else if (!rc) {
        snapshot(&l, &a);
    }
    mr_live_free(&l);
    return rc;
}
