/* The common call of a prepared scan on CUDA, compiled: the warm call of a loop.
 *
 * CupyBackend.common_call (cupy.py) makes one CommonCall per prepared scan. It launches
 * the calls that the Python function it stands for would launch at once: device arrays on
 * the stream, size class and input dtype of the call before, with out= or (scans, not
 * reductions) a result it makes, of a launch that Python set up from a LaunchPlan
 * (backends/base.py: the launch function's launch_state, turned into a record by cupy.py's
 * _launch_record). Everything else -- the first call, another stream, a carry, a scratch
 * buffer to grow, an epoch to wrap, a launch that failed -- goes to that Python function,
 * which then tells this one what the next call may reuse (remember()). So this file
 * decides nothing Python does not decide too: it skips the interpreter on the path a loop
 * takes, where each Python step costs a fair part of CUDA's own launch.
 *
 * It knows no kernel: the record says what each 8-byte slot of the argument block holds
 * (one code a slot: an array's pointer, the element count, the scratch buffer, the
 * launch's code, the scratch's epoch, or a constant the launcher packed once), how big the
 * scratch must be for so many tiles and the largest epoch, and this file fills the slots
 * in. The codes are LaunchPlan's (ARG_SLOTS in base.py); SLOTS below names them in this
 * file's order, and cupy.py uses this module only where the two agree.
 *
 * It holds the GIL, but the Python it calls (the current stream, the lock, CuPy's
 * constructor) may let other threads run: a call works on a copy of the last launch, and
 * takes the queue's scratch lock (Backend.lock) as Python's launch does, without waiting
 * (a launch that would wait is left to Python): another thread's launch holds it while
 * CuPy's launch runs without the GIL, reading the same argument block.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <string.h>

/* the record remember() takes, as this build reads it (cupy.py checks it: LAYOUT) */
#define LAYOUT 3

/* What a slot of the argument block holds: base.py's ARG_SLOTS, in its order (exported as
 * SLOTS, which cupy.py compares with it) */
enum { ARG_SRC, ARG_DST, ARG_N, ARG_SCRATCH, ARG_CODE, ARG_EPOCH, ARG_CONST, ARG_SEG, ARG_FIRST, ARG_SEGN, ARG_COUNT };
static const char *const slot_names[ARG_COUNT] = {"src", "dst", "n", "scratch", "code", "epoch",
                                                  "const", "seg", "first", "segn"};

/* cuLaunchKernel, as libcuda exports it (the address comes from Python: ctypes) */
typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, unsigned shared, void *stream, void **params, void **extra);

/* The launch the last call found: what remember() took, its objects borrowed from the
 * record tuple, which keeps them alive. */
typedef struct {
    PyObject *record;  /* the tuple (NULL: none) */
    PyObject *stream;  /* the stream object, compared by identity */
    PyObject *load;    /* the load name, compared by identity (the dict's own str) */
    Py_ssize_t lo, hi; /* its size class: lo < n <= hi */
    PyObject *acquire, *release, *scratch;
    Py_ssize_t tile, header, per_tile, stream_from;
    unsigned long long limit, code, stream_code; /* the code below stream_from elements, and from it */
    /* the slots a call fills in (the record's codes but the constants, which the launcher
     * packed once): where each is and what it holds, each code at most once */
    struct {
        Py_ssize_t at;
        int code;
    } fill[ARG_CONST];
    int nfill;
    void *function, **params, *hstream;
    uint64_t *slots; /* the argument block, its constants packed by the launcher */
    unsigned threads;
} Launch;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    /* fixed for the prepared scan */
    PyObject *ndarray;   /* cupy.ndarray */
    PyObject *dtype;     /* the scan's dtype: out's, by identity */
    PyObject *loads;     /* dict: input dtype -> its programs' in_dtype name */
    PyObject *stream_of; /* cupy.cuda.get_current_stream */
    PyObject *slow;      /* the Python common call */
    Py_ssize_t osize;    /* bytes of an element of out */
    Py_ssize_t align;    /* the kernels' vector bytes: both arrays start on one */
    int one;             /* a reduction: out holds one element */
    launch_fn launch;
    Launch last;
} CommonCall;

static PyObject *s_c_contiguous, *s_dtype, *s_size, *s_data, *s_ptr, *s_ndim, *s_nbytes, *s_epoch, *s_buf;

static void forget(CommonCall *self)
{
    PyObject *record = self->last.record;
    memset(&self->last, 0, sizeof self->last);
    Py_XDECREF(record); /* last: what it frees may run code that reads self */
}

static int traverse(CommonCall *self, visitproc visit, void *arg)
{
    Py_VISIT(self->ndarray);
    Py_VISIT(self->dtype);
    Py_VISIT(self->loads);
    Py_VISIT(self->stream_of);
    Py_VISIT(self->slow);
    Py_VISIT(self->last.record);
    return 0;
}

static int clear(CommonCall *self)
{
    Py_CLEAR(self->ndarray);
    Py_CLEAR(self->dtype);
    Py_CLEAR(self->loads);
    Py_CLEAR(self->stream_of);
    Py_CLEAR(self->slow);
    forget(self);
    return 0;
}

static void dealloc(CommonCall *self)
{
    PyObject_GC_UnTrack(self);
    clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* an attribute as a Py_ssize_t; -1 with an exception set, or -1 as a value (callers check) */
static Py_ssize_t ssize_attr(PyObject *o, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    Py_ssize_t r = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    return r;
}

/* an array's device pointer (x.data.ptr); 0 with an exception set */
static uintptr_t pointer_of(PyObject *arr)
{
    PyObject *data = PyObject_GetAttr(arr, s_data);
    if (data == NULL)
        return 0;
    PyObject *ptr = PyObject_GetAttr(data, s_ptr);
    Py_DECREF(data);
    if (ptr == NULL)
        return 0;
    uintptr_t r = (uintptr_t)PyLong_AsUnsignedLongLong(ptr);
    Py_DECREF(ptr);
    return PyErr_Occurred() ? 0 : r;
}

static int truth_attr(PyObject *o, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* out given: the scan's dtype, 1-D, m elements, contiguous, aligned, apart from x (at, n
 * elements); 1 with its pointer in *to, 0 not so, -1 an error */
static int usable_out(CommonCall *self, PyObject *x, uintptr_t at, PyObject *out, Py_ssize_t m, uintptr_t *to)
{
    if (Py_TYPE(out) != (PyTypeObject *)self->ndarray)
        return 0;
    PyObject *dt = PyObject_GetAttr(out, s_dtype);
    if (dt == NULL)
        return -1;
    Py_DECREF(dt); /* identity only: the scan's dtype object outlives the call */
    if (dt != self->dtype)
        return 0;
    Py_ssize_t v = ssize_attr(out, s_ndim);
    if (v != 1)
        return (v == -1 && PyErr_Occurred()) ? -1 : 0;
    v = ssize_attr(out, s_size);
    if (v != m)
        return (v == -1 && PyErr_Occurred()) ? -1 : 0;
    int flag = truth_attr(out, s_c_contiguous);
    if (flag <= 0)
        return flag;
    *to = pointer_of(out);
    if (*to == 0)
        return PyErr_Occurred() ? -1 : 0;
    if (*to % (uintptr_t)self->align)
        return 0;
    Py_ssize_t xbytes = ssize_attr(x, s_nbytes);
    if (xbytes == -1 && PyErr_Occurred())
        return -1;
    return !(*to < at + (uintptr_t)xbytes && at < *to + (uintptr_t)(m * self->osize));
}

/* The launch ``l``, if this call is of its kind: its result (a new reference), or NULL:
 * with an exception set, an error; without, not this one's call (nothing done). */
static PyObject *launch_as(CommonCall *self, const Launch *l, PyObject *x, PyObject *out)
{
    if (Py_TYPE(x) != (PyTypeObject *)self->ndarray || (out == Py_None && self->one))
        return NULL; /* a reduction's result without out is a 0-d view: Python's */
    int flag = truth_attr(x, s_c_contiguous);
    if (flag <= 0)
        return NULL;
    PyObject *dt = PyObject_GetAttr(x, s_dtype);
    if (dt == NULL)
        return NULL;
    PyObject *load = PyDict_GetItemWithError(self->loads, dt); /* borrowed */
    Py_DECREF(dt);
    if (load != l->load)
        return NULL;
    Py_ssize_t n = ssize_attr(x, s_size);
    if (!(l->lo < n && n <= l->hi)) /* n == -1 on an error: below every class */
        return NULL;
    uintptr_t at = pointer_of(x), to = 0;
    if (at == 0 || at % (uintptr_t)self->align)
        return NULL;
    if (out != Py_None && usable_out(self, x, at, out, self->one ? 1 : n, &to) <= 0)
        return NULL;

    /* the stream of the last call: the current one, by identity */
    PyObject *stream = PyObject_CallNoArgs(self->stream_of);
    if (stream == NULL)
        return NULL;
    Py_DECREF(stream); /* identity only: record holds the one compared with */
    if (stream != l->stream)
        return NULL;

    Py_ssize_t tiles = (n + l->tile - 1) / l->tile;
    if ((size_t)tiles > UINT_MAX)
        return NULL; /* more groups than a launch takes: Python's raises */

    /* the result, where out is not given: CuPy's constructor on the one GPU, as Python's,
     * and before the lock, as Python's (what it runs may start a scan of its own) */
    PyObject *dst = NULL;
    if (out == Py_None) {
        PyObject *shape = Py_BuildValue("(n)", n);
        if (shape == NULL)
            return NULL;
        PyObject *args[2] = {shape, self->dtype};
        dst = PyObject_Vectorcall(self->ndarray, args, 2, NULL);
        Py_DECREF(shape);
        if (dst == NULL)
            return NULL;
        if ((to = pointer_of(dst)) == 0) {
            Py_DECREF(dst);
            return NULL;
        }
    }

    /* the launch lock, without waiting (see the top of this file) */
    PyObject *got = PyObject_CallOneArg(l->acquire, Py_False);
    if (got == NULL) {
        Py_XDECREF(dst);
        return NULL;
    }
    Py_DECREF(got);
    if (got != Py_True) {
        Py_XDECREF(dst);
        return NULL;
    }
    PyObject *result = NULL, *e = NULL, *buf = NULL;
    Py_ssize_t room = ssize_attr(l->scratch, s_nbytes);
    if (room == -1 && PyErr_Occurred())
        goto done;
    if (l->header + tiles * l->per_tile > room)
        goto done; /* the buffer grows: Python's */
    e = PyObject_GetAttr(l->scratch, s_epoch);
    if (e == NULL)
        goto done;
    unsigned long long epoch = PyLong_AsUnsignedLongLong(e) + 1;
    Py_CLEAR(e);
    if (PyErr_Occurred() || epoch > l->limit)
        goto done; /* past the limit the tags would overflow: Python zeroes the buffer */
    buf = PyObject_GetAttr(l->scratch, s_buf);
    if (buf == NULL)
        goto done;
    uint64_t scratch = PyLong_AsUnsignedLongLong(buf);
    if (PyErr_Occurred())
        goto done;
    e = PyLong_FromUnsignedLongLong(epoch);
    if (e == NULL || PyObject_SetAttr(l->scratch, s_epoch, e) < 0)
        goto done;
    /* each slot as the record says; a constant stays as the launcher packed it (under this
     * lock, as everything written here) */
    uint64_t *a = l->slots;
    uint64_t code = n < l->stream_from ? l->code : l->stream_code;
    for (int k = 0; k < l->nfill; k++) {
        uint64_t *slot = a + l->fill[k].at;
        switch (l->fill[k].code) {
        case ARG_SRC: *slot = at; break;
        case ARG_DST: *slot = to; break;
        case ARG_N: *slot = (uint64_t)n; break;
        case ARG_SCRATCH: *slot = scratch; break;
        case ARG_CODE: *slot = code; break;
        default: *slot = epoch; break; /* ARG_EPOCH: remember() let no other in */
        }
    }
    /* without the GIL, as CuPy launches: a full launch queue blocks here, and a host
     * function in the stream may need the GIL to run. The argument block is the lock's, and
     * the record (held by fast()) keeps it alive. A launch that fails launches nothing:
     * Python's path then launches, or raises (a thread without a context binds one there);
     * the epoch skipped is never reused. */
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = self->launch(l->function, (unsigned)tiles, 1, 1, l->threads, 1, 1, 0, l->hstream, l->params, NULL);
    Py_END_ALLOW_THREADS
    if (status == 0)
        result = Py_NewRef(out == Py_None ? dst : out);
done:
    Py_XDECREF(e);
    Py_XDECREF(buf);
    Py_XDECREF(dst);
    {
        PyObject *type, *value, *trace; /* an error set meanwhile waits out the release */
        PyErr_Fetch(&type, &value, &trace);
        PyObject *r = PyObject_CallNoArgs(l->release);
        if (r == NULL) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(trace);
            Py_XDECREF(result);
            return NULL;
        }
        Py_DECREF(r);
        PyErr_Restore(type, value, trace);
    }
    return result;
}

/* launch_as() with the last launch; a copy of it, since the Python calls made meanwhile
 * (the stream, the lock, the result) may let another thread remember another */
static PyObject *fast(CommonCall *self, PyObject *x, PyObject *out)
{
    if (self->last.record == NULL)
        return NULL;
    Launch l = self->last;
    Py_INCREF(l.record);
    PyObject *result = launch_as(self, &l, x, out);
    Py_DECREF(l.record);
    return result;
}

static PyObject *call(CommonCall *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 3 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "a common call takes (x, out, carry)");
        return NULL;
    }
    if (self->slow == NULL) { /* cleared by the collector, and called by a finalizer */
        PyErr_SetString(PyExc_ReferenceError, "a common call that was cleared");
        return NULL;
    }
    if (args[2] == Py_None) { /* a carry is Python's */
        PyObject *result = fast(self, args[0], args[1]);
        if (result != NULL || PyErr_Occurred())
            return result;
    }
    return PyObject_Vectorcall(self->slow, args, 3, NULL);
}

static PyObject *remember(CommonCall *self, PyObject *record)
{
    /* record: None, or (stream, lo, hi, load, acquire, release, scratch, tile, header,
     * per_tile, limit, code, stream_code, stream_from, codes, function, params, slots,
     * hstream, threads, keep): the size class, the lock's methods, the Scratch, the plan's
     * tiles and scratch bytes (header + tiles * per_tile) and largest epoch, the launch's
     * code below and from stream_from elements, a byte per slot of the argument block
     * saying what it holds, and the launcher's function, block and stream; keep holds
     * what the addresses point into */
    if (record == Py_None) {
        forget(self);
        Py_RETURN_NONE;
    }
    unsigned long long lo, hi, limit, code, stream_code, function, params, slots, hstream;
    Py_ssize_t tile, header, per_tile, stream_from;
    unsigned threads;
    PyObject *stream, *load, *acquire, *release, *scratch, *codes, *keep;
    if (!PyArg_ParseTuple(record, "OKKOOOOnnnKKKnSKKKKIO:remember", &stream, &lo, &hi, &load, &acquire,
                          &release, &scratch, &tile, &header, &per_tile, &limit, &code, &stream_code,
                          &stream_from, &codes, &function, &params, &slots, &hstream, &threads, &keep))
        return NULL;
    if (tile <= 0 || per_tile <= 0 || lo >= hi || hi > (unsigned long long)PY_SSIZE_T_MAX || !function) {
        PyErr_SetString(PyExc_ValueError, "remember: a size class lo < n <= hi of tiles that take room");
        return NULL;
    }
    /* every code one this file fills in (a plain launch's: no segments), and each at most
     * once (the launcher made the block of as many slots as there are codes) */
    const unsigned char *c = (const unsigned char *)PyBytes_AS_STRING(codes);
    Py_ssize_t nslots = PyBytes_GET_SIZE(codes);
    Launch l = {0};
    int seen[ARG_COUNT] = {0};
    for (Py_ssize_t i = 0; i < nslots; i++) {
        if (c[i] > ARG_CONST || (c[i] != ARG_CONST && seen[c[i]]++)) {
            PyErr_SetString(PyExc_ValueError, "remember: a slot code not known, or given twice");
            return NULL;
        }
        if (c[i] != ARG_CONST) {
            l.fill[l.nfill].at = i;
            l.fill[l.nfill++].code = c[i];
        }
    }
    l.record = Py_NewRef(record);
    l.stream = stream;
    l.load = load;
    l.lo = (Py_ssize_t)lo;
    l.hi = (Py_ssize_t)hi;
    l.acquire = acquire;
    l.release = release;
    l.scratch = scratch;
    l.tile = tile;
    l.header = header;
    l.per_tile = per_tile;
    l.stream_from = stream_from;
    l.limit = limit;
    l.code = code;
    l.stream_code = stream_code;
    l.function = (void *)(uintptr_t)function;
    l.params = (void **)(uintptr_t)params;
    l.hstream = (void *)(uintptr_t)hstream;
    l.slots = (uint64_t *)(uintptr_t)slots;
    l.threads = threads;
    PyObject *old = self->last.record;
    self->last = l;
    Py_XDECREF(old); /* last: what it frees may run code, even another remember() */
    Py_RETURN_NONE;
}

static PyObject *new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *ndarray, *dtype, *loads, *stream_of, *slow;
    Py_ssize_t osize, align;
    int one;
    unsigned long long launch;
    static char *names[] = {"ndarray", "dtype", "loads", "stream_of", "slow", "osize", "align", "one", "launch", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!OOnnpK:CommonCall", names, &ndarray, &dtype,
                                     &PyDict_Type, &loads, &stream_of, &slow, &osize, &align, &one, &launch))
        return NULL;
    if (!PyType_Check(ndarray) || align <= 0 || launch == 0) {
        PyErr_SetString(PyExc_ValueError, "CommonCall: ndarray is a type, align > 0, launch an address");
        return NULL;
    }
    CommonCall *self = (CommonCall *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)call;
    self->ndarray = Py_NewRef(ndarray);
    self->dtype = Py_NewRef(dtype);
    self->loads = Py_NewRef(loads);
    self->stream_of = Py_NewRef(stream_of);
    self->slow = Py_NewRef(slow);
    self->osize = osize;
    self->align = align;
    self->one = one;
    self->launch = (launch_fn)(uintptr_t)launch;
    return (PyObject *)self;
}

static PyObject *tp_call_(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(self, args, kwargs);
}

static PyMethodDef methods[] = {
    {"remember", (PyCFunction)remember, METH_O,
     "remember(record): what the next call may reuse (a tuple, see _cuda_call.c), or None."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CommonCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "jitscan.backends._cuda_call.CommonCall",
    .tp_doc = "A prepared scan's common call on CUDA, compiled: call(x, out, carry).",
    .tp_basicsize = sizeof(CommonCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(CommonCall, vectorcall),
    .tp_call = tp_call_,
    .tp_new = new,
    .tp_dealloc = (destructor)dealloc,
    .tp_traverse = (traverseproc)traverse,
    .tp_clear = (inquiry)clear,
    .tp_methods = methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_cuda_call",
    .m_doc = "The common call of a prepared scan on CUDA, compiled.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__cuda_call(void)
{
    struct {
        PyObject **slot;
        const char *text;
    } names[] = {{&s_c_contiguous, "_c_contiguous"}, {&s_dtype, "dtype"}, {&s_size, "size"},
                 {&s_data, "data"}, {&s_ptr, "ptr"}, {&s_ndim, "ndim"}, {&s_nbytes, "nbytes"},
                 {&s_epoch, "epoch"}, {&s_buf, "buf"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    if (PyType_Ready(&CommonCallType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    /* what cupy.py checks before it uses this module: an older build's remember() would
     * take another record */
    PyObject *slot_tuple = PyTuple_New(ARG_COUNT);
    if (slot_tuple == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < ARG_COUNT; i++) {
        PyObject *name = PyUnicode_FromString(slot_names[i]);
        if (name == NULL) {
            Py_DECREF(slot_tuple);
            Py_DECREF(m);
            return NULL;
        }
        PyTuple_SET_ITEM(slot_tuple, i, name); /* steals it */
    }
    int failed = PyModule_AddObjectRef(m, "SLOTS", slot_tuple) < 0;
    Py_DECREF(slot_tuple);
    if (failed || PyModule_AddIntConstant(m, "LAYOUT", LAYOUT) < 0 ||
        PyModule_AddObjectRef(m, "CommonCall", (PyObject *)&CommonCallType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
