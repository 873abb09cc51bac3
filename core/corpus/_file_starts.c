/* The starts of many corpus files at once: open, fstat and read each, on two threads,
 * without the GIL (core/corpus/check.py, read_regular_starts).
 *
 * A folder of 100,000 tiny files costs its system calls: four a file (open, fstat, read,
 * close). Python makes each a call of its own with the GIL held; here a batch of paths is
 * split between two threads that make them while Python waits, and each file's result is
 * built afterwards with the GIL. The invariant the caller relies on: a file's result is
 * what one open of it saw (its fstat and the bytes read through the same descriptor), or
 * the errno of the call that failed, so the caller can tell the reason as a stat would.
 * The open never waits (O_NONBLOCK: a FIFO without a writer) and takes no terminal; a file
 * that is not regular is not read.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    const char *path;
    int error;          /* errno of the failed open, fstat or read; 0 when all went well */
    struct stat info;
    char *data;         /* malloc'd, `got` bytes; NULL when not read (not a regular file) */
    Py_ssize_t got;
} FileStart;

typedef struct {
    FileStart *files;
    Py_ssize_t count;
    Py_ssize_t limit;
} Share;

static void read_start(FileStart *f, Py_ssize_t limit) {
    int fd = open(f->path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        f->error = errno;
        return;
    }
    if (fstat(fd, &f->info) != 0) {
        f->error = errno;
    } else if (S_ISREG(f->info.st_mode)) {
        /* one byte past the size tells a file that grew since its fstat */
        Py_ssize_t want = f->info.st_size < limit ? (Py_ssize_t)f->info.st_size + 1 : limit;
        f->data = malloc(want > 0 ? (size_t)want : 1);
        if (f->data == NULL) {
            f->error = ENOMEM;
        } else {
            while (f->got < want) {
                ssize_t n = read(fd, f->data + f->got, (size_t)(want - f->got));
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) { f->error = errno; break; }
                if (n == 0) break;
                f->got += n;
            }
        }
    }
    close(fd);
}

static void *read_share(void *arg) {
    Share *share = arg;
    for (Py_ssize_t i = 0; i < share->count; i++) read_start(&share->files[i], share->limit);
    return NULL;
}

static PyObject *result_of(FileStart *f) {
    if (f->error) return PyLong_FromLong(f->error);
    PyObject *data = Py_None;
    if (f->data != NULL) {
        data = PyBytes_FromStringAndSize(f->data, f->got);
        if (data == NULL) return NULL;
    } else {
        Py_INCREF(data);
    }
    long long mtime_ns = (long long)f->info.st_mtim.tv_sec * 1000000000LL + f->info.st_mtim.tv_nsec;
    return Py_BuildValue("(KLLKKN)", (unsigned long long)f->info.st_mode, (long long)f->info.st_size, mtime_ns,
                         (unsigned long long)f->info.st_dev, (unsigned long long)f->info.st_ino, data);
}

/* read_starts(paths, limit) -> a list, per path: (mode, size, mtime_ns, dev, ino, data) or an errno */
static PyObject *read_starts(PyObject *self, PyObject *args) {
    PyObject *paths;
    Py_ssize_t limit;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &paths, &limit)) return NULL;
    if (limit < 0) {
        PyErr_SetString(PyExc_ValueError, "limit must not be negative");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(paths);
    FileStart *files = calloc(count > 0 ? (size_t)count : 1, sizeof(FileStart));
    PyObject **encoded = calloc(count > 0 ? (size_t)count : 1, sizeof(PyObject *));
    PyObject *out = NULL;
    if (files == NULL || encoded == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        if (!PyUnicode_FSConverter(PyList_GET_ITEM(paths, i), &encoded[i])) goto done;
        files[i].path = PyBytes_AS_STRING(encoded[i]);
    }
    Py_BEGIN_ALLOW_THREADS
    Share first = {files, count / 2, limit}, second = {files + count / 2, count - count / 2, limit};
    pthread_t helper;
    int helped = count >= 8 && pthread_create(&helper, NULL, read_share, &first) == 0;
    if (!helped) read_share(&first);
    read_share(&second);
    if (helped) pthread_join(helper, NULL);
    Py_END_ALLOW_THREADS
    out = PyList_New(count);
    if (out == NULL) goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = result_of(&files[i]);
        if (item == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, item);
    }
done:
    for (Py_ssize_t i = 0; i < count; i++) {
        if (files != NULL) free(files[i].data);
        if (encoded != NULL) Py_XDECREF(encoded[i]);
    }
    free(files);
    free(encoded);
    return out;
}

static PyMethodDef methods[] = {
    {"read_starts", read_starts, METH_VARARGS,
     "read_starts(paths, limit) -> per path (mode, size, mtime_ns, dev, ino, first bytes or None) or an errno"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_file_starts",
    "The starts of many corpus files at once, on two threads (see core/corpus/check.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__file_starts(void) { return PyModule_Create(&module); }
