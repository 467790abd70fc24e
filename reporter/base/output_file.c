// SPDX-License-Identifier: MIT
// Output files written to a temporary file and renamed into place.
#include "output_file.h"

#include "escape.h"
#include "messages.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool mr_output_file_in_place(const char* path) {
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

// What a report may be written into as it is: a FIFO, a socket, a terminal or /dev/null
// (the shell's /dev/stdout and /dev/fd/N name one of them). Never a disk, /dev/mem or any
// other device a symlink planted at the output path could lead to.
static bool stream_like(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0)
        return false;
    if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || isatty(fd))
        return true;
    struct stat null;
    return S_ISCHR(st.st_mode) && stat("/dev/null", &null) == 0 && S_ISCHR(null.st_mode) &&
           st.st_rdev == null.st_rdev;
}

// A FIFO, socket or terminal is opened and written as it is (a FIFO's open waits for its
// reader). Opening writes nothing: a device refused then is left as it was.
static int open_in_place(mr_output_file* o, const char* path) {
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd >= 0 && !stream_like(fd)) {
        close(fd);
        mr_messages_error(path,
                          "is a device: reports are written to files, pipes and terminals only");
        return MR_EXIT_IO;
    }
    if (fd < 0 || !(o->path = strdup(path)) || !(o->fp = fdopen(fd, "w"))) {
        mr_messages_error(path, "cannot write: %s", fd < 0 ? strerror(errno) : "out of memory");
        if (fd >= 0 && !o->fp)
            close(fd);
        free(o->path);
        memset(o, 0, sizeof *o);
        return MR_EXIT_IO;
    }
    // -o /dev/tty (or /dev/stdout on a terminal) is as much a terminal as -o -.
    if (isatty(fd)) {
        FILE* escaped = mr_escape_terminal_stream(o->fp);
        if (!escaped) {
            mr_messages_error(path, "cannot write: out of memory");
            fclose(o->fp);
            free(o->path);
            memset(o, 0, sizeof *o);
            return MR_EXIT_IO;
        }
        o->raw = o->fp;
        o->fp = escaped;
        o->to_terminal = true;
    }
    return MR_EXIT_OK;
}

// Closes what was written in place: the escaping stream, then the file under it.
static bool close_in_place(mr_output_file* o) {
    bool bad = ferror(o->fp) | (fclose(o->fp) != 0);
    if (o->raw)
        bad |= ferror(o->raw) | (fclose(o->raw) != 0);
    return bad;
}

int mr_output_file_open(mr_output_file* o, const char* path, bool force) {
    memset(o, 0, sizeof *o);
    if (strcmp(path, "-") == 0) {
        // A name from a capture is the traced program's bytes: on a terminal they could
        // carry escape sequences (a clipboard write, a changed title), whatever the format.
        FILE* escaped = isatty(STDOUT_FILENO) ? mr_escape_terminal_stream(stdout) : NULL;
        o->fp = escaped ? escaped : stdout;
        o->to_terminal = escaped != NULL;
        return MR_EXIT_OK;
    }
    if (mr_output_file_in_place(path))
        return open_in_place(o, path);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        mr_messages_error(path, "is a directory");
        return MR_EXIT_IO;
    }
    if (!force && access(path, F_OK) == 0) {
        mr_messages_error(path, "already exists (use -f to overwrite)");
        return MR_EXIT_IO;
    }
    o->path = strdup(path);
    if (!o->path || asprintf(&o->tmp, "%s.tmp.XXXXXX", path) < 0) {
        free(o->path);
        o->path = NULL;
        mr_messages_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    int fd = mkstemp(o->tmp);
    if (fd < 0 || !(o->fp = fdopen(fd, "w"))) {
        mr_messages_error(path, "cannot write: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        free(o->path);
        free(o->tmp);
        memset(o, 0, sizeof *o);
        return MR_EXIT_IO;
    }
    // mkstemp creates 0600; outputs are ordinary files.
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    return MR_EXIT_OK;
}

int mr_output_file_commit(mr_output_file* o) {
    if (!o->path) {
        int bad = fflush(o->fp) != 0 || ferror(o->fp);
        if (o->to_terminal) {
            bad |= fclose(o->fp) != 0;
            memset(o, 0, sizeof *o);
        }
        if (bad)
            mr_messages_error("<stdout>", "write failed: %s", strerror(errno));
        return bad ? MR_EXIT_IO : MR_EXIT_OK;
    }
    int rc = MR_EXIT_OK;
    if (!o->tmp) {
        if (close_in_place(o)) {
            mr_messages_error(o->path, "write failed: %s", strerror(errno));
            rc = MR_EXIT_IO;
        }
    } else if (ferror(o->fp) | (fclose(o->fp) != 0)) {
        mr_messages_error(o->path, "write failed: %s", strerror(errno));
        unlink(o->tmp);
        rc = MR_EXIT_IO;
    } else if (rename(o->tmp, o->path) != 0) {
        mr_messages_error(o->path, "cannot rename into place: %s", strerror(errno));
        unlink(o->tmp);
        rc = MR_EXIT_IO;
    } else {
        mr_messages_note_written(o->path);
    }
    free(o->path);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    return rc;
}

void mr_output_file_abort(mr_output_file* o) {
    if ((o->path || o->to_terminal) && o->fp)
        fclose(o->fp);
    if (o->raw)
        fclose(o->raw);
    if (o->tmp)
        unlink(o->tmp);
    free(o->path);
    free(o->tmp);
    memset(o, 0, sizeof *o);
}

char* mr_output_file_path_with_ext(const char* path, const char* ext) {
    const char* slash = strrchr(path, '/');
    const char* base = slash ? slash + 1 : path;
    const char* dot = strrchr(base, '.');
    size_t keep = dot && dot != base ? (size_t)(dot - path) : strlen(path);
    size_t n = strlen(ext);
    char* out = malloc(keep + n + 1);
    if (out) {
        memcpy(out, path, keep);
        memcpy(out + keep, ext, n + 1);
    }
    return out;
}
