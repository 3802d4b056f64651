/* The common call of a prepared scan, compiled: the warm call of a loop, on CUDA or OpenCL.
 *
 * CupyBackend.common_call (cupy.py) and OpenCLBackend.common_call (opencl.py) make one
 * CommonCall per prepared scan, through backends/compiled.py. It launches
 * the calls that the Python function it stands for would launch at once: device arrays on
 * the stream, size class and input dtype of the call before, with out= or (scans, not
 * reductions) a result it makes, of a launch that Python set up from a LaunchPlan
 * (backends/launch.py: the launch function's launch_state, turned into a record by
 * compiled.py's launch_record), from a carry the host knows too (bytes: in the launch's
 * carry words).
 * Everything else -- the first call, another stream, a carry on the device, a scratch
 * buffer to grow, an epoch to wrap, a launch that failed -- goes to that Python function,
 * which then tells this one what the next call may reuse (remember()). So this file
 * decides nothing Python does not decide too: it skips the interpreter on the path a loop
 * takes, where each Python step costs a fair part of CUDA's own launch.
 *
 * With form=True it is the other forms' common call (FormCalls._form_python in plan/forms.py,
 * its slow function): call(x, out, flags, offsets, row_len, carry) of a segmented scan by
 * flags, by offsets (up to the record's number of tiles the tiles search the offsets
 * themselves, above it the offsets' pre-pass launched first, from a record of its own; the
 * call left to Python where the queue's alarm is set: Python raises what an earlier call's
 * offsets did) or of rows (of whole tiles: the plain program, the row's tiles in its count
 * slot), a reduction by offsets, a reduction by offsets in stages (MODE_STAGES, rts's:
 * the pre-pass, then launches of argument blocks of their own, each with a rule for its
 * workgroups, over a spine and each tile's open segment's partial, buffers of the queue
 * that only grow), and tuple values' scans.
 *
 * With transform= it is a transform's call (TransformScan in plan/transformed.py, the pass
 * under compaction, runs and partitions): call(reads, writes, n, queue) of the arrays its
 * callers made and checked, each passed with its length, on the queue of the launch before.
 *
 * It knows no kernel: the record says what each 8-byte slot of the argument block holds
 * (one code a slot: an array's pointer, the element count, the scratch buffer, the
 * launch's code, the scratch's epoch, or a constant the launcher packed once), how big the
 * scratch must be for so many tiles and the largest epoch, and this file fills the slots
 * in. The codes are LaunchPlan's (ARG_SLOTS in launch.py); SLOTS below names them in this
 * file's order, and compiled.py uses this module only where the two agree.
 *
 * Two APIs (api=): CUDA's, where an array is a device pointer (its offset slot a constant
 * 0), the queue the current stream and a launch one cuLaunchKernel of the argument block;
 * and OpenCL's, where an array is a buffer and an offset in elements (both filled in), the
 * queue the input's own (x.queue) and a launch its memory objects and the scalars that
 * changed since the last launch of the same kernel object (clSetKernelArg) and one
 * clEnqueueNDRangeKernel with no event. The compiled call has kernel objects of its own: a
 * kernel's arguments are state of the object, and Python's launches keep theirs in theirs.
 *
 * It holds the GIL, but the Python it calls (the current stream, the lock, the result's
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

/* the record remember() takes, as this build reads it (compiled.py checks it: LAYOUT) */
#define LAYOUT 8

/* What a slot of the argument block holds: launch.py's ARG_SLOTS, in its order (exported as
 * SLOTS, which compiled.py compares with it) */
enum { ARG_SRC, ARG_DST, ARG_N, ARG_SCRATCH, ARG_CODE, ARG_EPOCH, ARG_CONST, ARG_SEG, ARG_FIRST, ARG_SEGN,
       ARG_CARRY, ARG_WORD, ARG_FLAG, ARG_TILES, ARG_SPINE, ARG_OPEN, ARG_LEN, ARG_COUNT };
static const char *const slot_names[ARG_COUNT] = {"src",  "dst",  "n",     "scratch", "code", "epoch",
                                                  "const", "seg", "first", "segn",    "carry", "word",
                                                  "flag", "tiles", "spine", "open",  "len"};

/* the 8-byte words of a carry in a launch's arguments (launch.py's CARRY_WORDS) */
#define CARRY_WORDS 4
/* the most fields a tuple value has here (a carry's 32 bytes of 4-byte fields), and the
 * most arrays a transform reads or writes */
#define MAX_FIELDS 8

/* cuLaunchKernel, as libcuda exports it (the address comes from Python: ctypes) */
typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, unsigned shared, void *stream, void **params, void **extra);
/* clSetKernelArg and clEnqueueNDRangeKernel, as an ICD loader exports them */
typedef int32_t (*cl_set_arg_fn)(void *kernel, uint32_t index, size_t size, const void *value);
typedef int32_t (*cl_enqueue_fn)(void *queue, void *kernel, uint32_t dims, const size_t *offset,
                                 const size_t *global, const size_t *local, uint32_t nwait, const void *wait,
                                 void *event);
typedef int32_t (*cl_read_fn)(void *queue, void *buffer, uint32_t blocking, size_t offset, size_t size, void *host,
                              uint32_t nwait, const void *wait, void *event);
enum { API_CUDA, API_OPENCL };
/* an OpenCL kernel table's mark of a memory object's bytes (compiled.py's MEMORY_BIT) */
#define MEMORY_BIT (1ull << 63)

/* CUDA's graphs, as libcuda exports them (addresses from Python: cupy.py's _graph_addresses):
 * a reduction in stages is one graph launch (launch_graph) */
typedef struct { /* CUDA_KERNEL_NODE_PARAMS_v2; the v1 entry points read the fields before kern */
    void *func;
    unsigned gx, gy, gz, bx, by, bz, shared;
    void **params, **extra;
    void *kern, *ctx;
} KernelNode;
typedef int (*graph_create_fn)(void **graph, unsigned flags);
typedef int (*graph_add_fn)(void **node, void *graph, void *const *deps, size_t ndeps, const KernelNode *p);
typedef int (*graph_instantiate_fn)(void **exec, void *graph, unsigned long long flags);
typedef int (*graph_set_fn)(void *exec, void *node, const KernelNode *p);
typedef int (*graph_launch_fn)(void *exec, void *stream);
typedef int (*graph_destroy_fn)(void *object);
typedef struct {
    graph_create_fn create;
    graph_add_fn add;
    graph_instantiate_fn instantiate;
    graph_set_fn set;
    graph_launch_fn launch;
    graph_destroy_fn destroy_exec, destroy;
} GraphApi;

/* a reduction by offsets in stages (MODE_STAGES: rts's): the launches after the first,
 * each of its own argument block, a rule for its workgroups (GROUPS_*), and the slots a
 * call fills in */
#define MAX_STAGES 2

/* one graph of a chain of kernel launches, instantiated, and what it was built for (its
 * kernels and their workgroup sizes); a call keeps GRAPHS of them, so that calls of two
 * size classes in turn (two programs) do not build one anew each time */
#define GRAPHS 4
typedef struct {
    void *graph, *exec;
    int nodes;
    void *node[2 + MAX_STAGES], *node_fn[2 + MAX_STAGES];
    unsigned node_threads[2 + MAX_STAGES];
} Graph;

enum { GROUPS_TILES, GROUPS_ONE, GROUPS_TILES_PER_THREAD };
/* a slot a call fills in: where it is and what it holds */
typedef struct {
    Py_ssize_t at;
    int code;
} Fill;
typedef struct {
    void *function, **params;
    uint64_t *slots;
    unsigned threads;
    int groups, nfill;
    Fill fill[ARG_COUNT];
} Stage;

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
    /* a carry the host knows (bytes, up to 8 * CARRY_WORDS): OR-ed into the code, and
     * where its words go (carry_code 0: the launch takes none) */
    unsigned long long carry_code;
    Py_ssize_t carry_at[CARRY_WORDS];
    int ncarry;
    /* the slots a call fills in (the record's codes but the constants, which the launcher
     * packed once): where each is and what it holds, each code at most once */
    Fill fill[ARG_COUNT + 4 * MAX_FIELDS]; /* a transform's arrays: each a pointer and a length */
    int nfill;
    void *function, **params, *hstream;
    uint64_t *slots; /* the argument block, its constants packed by the launcher */
    unsigned threads;
    /* a form call's (FormCalls in plan/forms.py): the segments' mode; rows: whether this is
     * the launch of rows of whole tiles, and the whole-rows program's tile (0: none); by
     * offsets: the Scratch of each tile's first segment, the pre-pass's launch (its block's
     * first four slots the call's: offsets, their count, n, that buffer), the queue
     * alarm's flag in host memory, and up to how many tiles a launch has its tiles search
     * the offsets themselves instead (no pre-pass: segments.Prepass) */
    int mode, whole;
    Py_ssize_t rows_tile, search_tiles;
    PyObject *first;
    void *pre_function, **pre_params;
    uint64_t *pre_slots;
    unsigned pre_threads;
    volatile const uint32_t *flag;
    /* OpenCL, where the flag is a device word copied to the host behind a launch by
     * offsets that are not jitscan's own (backends/opencl.py's alarm), at most once in an
     * interval: clEnqueueReadBuffer, the flag's buffer, and due(offsets), whether this
     * launch copies it (segments.Prepass.copy_due, which keeps the interval) */
    cl_read_fn watch_read;
    uint64_t watch_mem;
    PyObject *due;
    /* in stages (MODE_STAGES): the first launch's scratch is the spine (header 0, no
     * epoch); ``open`` the Scratch of each tile's open segment's partial, ``open_per_tile``
     * bytes a tile; then the stages */
    PyObject *open;
    Py_ssize_t open_per_tile;
    int nstages;
    Stage stage[MAX_STAGES];
} Launch;

enum { MODE_PLAIN, MODE_FLAGS, MODE_ROWS, MODE_OFFSETS, MODE_FIELDS, MODE_STAGES, MODE_TRANSFORM };

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    /* fixed for the prepared scan */
    PyObject *ndarray;   /* cupy.ndarray */
    PyObject *dtype;     /* the scan's dtype: out's, by identity */
    PyObject *loads;     /* dict: input dtype -> its programs' in_dtype name */
    PyObject *stream_of; /* cupy.cuda.get_current_stream */
    PyObject *slow;      /* the Python common call */
    PyObject *scalar;    /* a reduction's result without out=: scalar(one-element array), a 0-d view (or NULL: Python's) */
    int form;            /* a form call: (x, out, flags, offsets, row_len, carry) */
    int transform;       /* a transform's call (MODE_TRANSFORM): (reads, writes, n, queue) */
    PyObject *flag_types, *offset_types; /* tuples: the dtypes of flags, of offsets, by identity */
    /* tuple values (MODE_FIELDS): each field's dtype (None: an index field, not in memory),
     * the fields written and their elements' bytes; a transform's (MODE_TRANSFORM): the
     * dtypes of the arrays it reads (fields) and writes (outputs) */
    PyObject *fields;
    Py_ssize_t nfields, nout, out_size[MAX_FIELDS];
    PyObject *outputs; /* the written fields' dtypes, in order */
    Py_ssize_t osize;    /* bytes of an element of out */
    Py_ssize_t align;    /* the kernels' vector bytes: both arrays start on one */
    int one;             /* a reduction: out holds one element */
    int api;             /* API_CUDA or API_OPENCL */
    launch_fn launch;    /* CUDA's launch; OpenCL's are the two below */
    cl_set_arg_fn set_arg;
    cl_enqueue_fn enqueue;
    PyObject *empty;        /* OpenCL: empty(shape, dtype, queue), the backend's (CUDA: ndarray(shape, dtype)) */
    PyObject *buffer_types; /* OpenCL: the types of an array's base_data that are buffers (not SVM) */
    Launch last;
    /* CUDA, by offsets with a pre-pass and in stages: the graphs of the kernels launched
     * (launch_graph), under their lock: calls on two streams hold two queues' locks, not one */
    GraphApi g;
    int graphs; /* whether g holds the entry points; cleared where a graph failed to build */
    PyThread_type_lock graph_lock;
    Graph graph[GRAPHS];
    int graph_next; /* the one a new graph replaces */
} CommonCall;

static PyObject *s_c_contiguous, *s_dtype, *s_size, *s_data, *s_ptr, *s_ndim, *s_nbytes, *s_epoch, *s_buf,
    *s_shape, *s_flags, *s_contiguous, *s_base_data, *s_int_ptr, *s_offset, *s_queue;

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
    Py_VISIT(self->scalar);
    Py_VISIT(self->flag_types);
    Py_VISIT(self->offset_types);
    Py_VISIT(self->fields);
    Py_VISIT(self->outputs);
    Py_VISIT(self->empty);
    Py_VISIT(self->buffer_types);
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
    Py_CLEAR(self->scalar);
    Py_CLEAR(self->flag_types);
    Py_CLEAR(self->offset_types);
    Py_CLEAR(self->fields);
    Py_CLEAR(self->outputs);
    Py_CLEAR(self->empty);
    Py_CLEAR(self->buffer_types);
    forget(self);
    return 0;
}

static void drop_graph(CommonCall *self, Graph *gr)
{
    if (gr->exec)
        self->g.destroy_exec(gr->exec);
    if (gr->graph)
        self->g.destroy(gr->graph);
    gr->exec = gr->graph = NULL;
    gr->nodes = 0;
}

static void drop_graphs(CommonCall *self)
{
    for (int k = 0; k < GRAPHS; k++)
        drop_graph(self, self->graph + k);
}

static void dealloc(CommonCall *self)
{
    PyObject_GC_UnTrack(self);
    clear(self);
    if (self->graphs)
        drop_graphs(self);
    if (self->graph_lock)
        PyThread_free_lock(self->graph_lock);
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

/* an int attribute as a uint64; 0 with an exception set */
static uint64_t u64_attr(PyObject *o, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return 0;
    uint64_t r = PyLong_AsUnsignedLongLong(v);
    Py_DECREF(v);
    return PyErr_Occurred() ? 0 : r;
}

/* an object's handle: an int itself (CUDA's pointers), or its int_ptr (an OpenCL object);
 * 0 with an exception set */
static uint64_t handle_of(PyObject *o)
{
    if (PyLong_Check(o)) {
        uint64_t r = PyLong_AsUnsignedLongLong(o);
        return PyErr_Occurred() ? 0 : r;
    }
    return u64_attr(o, s_int_ptr);
}

/* Where an array's elements are: on CUDA its device pointer (x.data.ptr), *off 0; on
 * OpenCL its buffer (x.base_data, of a buffer type: not SVM's) and *off its byte offset
 * there (x.offset). 0: not such an array, or an error (then with an exception set). */
static uintptr_t array_at(const CommonCall *self, PyObject *arr, uint64_t *off)
{
    *off = 0;
    if (self->api == API_CUDA) {
        PyObject *data = PyObject_GetAttr(arr, s_data);
        if (data == NULL)
            return 0;
        uintptr_t r = (uintptr_t)u64_attr(data, s_ptr);
        Py_DECREF(data);
        return r;
    }
    PyObject *base = PyObject_GetAttr(arr, s_base_data);
    if (base == NULL)
        return 0;
    int known = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->buffer_types); i++)
        known |= (PyObject *)Py_TYPE(base) == PyTuple_GET_ITEM(self->buffer_types, i);
    uintptr_t r = known ? (uintptr_t)u64_attr(base, s_int_ptr) : 0;
    Py_DECREF(base);
    if (r == 0)
        return 0;
    PyObject *o = PyObject_GetAttr(arr, s_offset);
    if (o == NULL)
        return 0;
    Py_ssize_t at = PyLong_AsSsize_t(o);
    Py_DECREF(o);
    if (at < 0)
        return 0; /* an error (set), or no offset an array has */
    *off = (uint64_t)at;
    return r;
}

/* whether the kernels' vectors fit the array's start: CUDA's pointer, OpenCL's offset
 * (its buffers start on the device's base alignment, at least 128 bytes) */
static int misaligned(const CommonCall *self, uintptr_t at, uint64_t off)
{
    return ((self->api == API_CUDA ? at : off) % (uint64_t)self->align) != 0;
}

/* whether two arrays' bytes overlap: pointers on CUDA, offsets in one buffer on OpenCL */
static int overlap(const CommonCall *self, uintptr_t a, uint64_t a_off, uint64_t a_bytes, uintptr_t b,
                   uint64_t b_off, uint64_t b_bytes)
{
    if (self->api == API_OPENCL) {
        if (a != b)
            return 0;
        a = (uintptr_t)a_off;
        b = (uintptr_t)b_off;
    }
    return a < b + b_bytes && b < a + a_bytes;
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

/* whether an array is C-contiguous: CuPy's flag itself, PyOpenCL's flags (made once an array) */
static int contiguous(const CommonCall *self, PyObject *arr)
{
    if (self->api == API_CUDA)
        return truth_attr(arr, s_c_contiguous);
    PyObject *flags = PyObject_GetAttr(arr, s_flags);
    if (flags == NULL)
        return -1;
    int r = truth_attr(flags, s_contiguous);
    Py_DECREF(flags);
    return r;
}

/* whether the call's queue is the launch's: CUDA's current stream, the array's own queue
 * on OpenCL (``x``: an array of the call); by identity. 1, 0, or -1 an error */
static int same_queue(const CommonCall *self, const Launch *l, PyObject *x)
{
    PyObject *q = self->api == API_CUDA ? PyObject_CallNoArgs(self->stream_of) : PyObject_GetAttr(x, s_queue);
    if (q == NULL)
        return -1;
    Py_DECREF(q); /* identity only: the record holds the one compared with */
    return q == l->stream;
}

/* a new array for a result, as Python's call makes it: CuPy's constructor on the one GPU,
 * the backend's empty() on the launch's queue on OpenCL */
static PyObject *new_array(const CommonCall *self, const Launch *l, PyObject *shape, PyObject *dtype)
{
    if (self->api == API_CUDA) {
        PyObject *args[2] = {shape, dtype};
        return PyObject_Vectorcall(self->ndarray, args, 2, NULL);
    }
    PyObject *args[3] = {shape, dtype, l->stream};
    return PyObject_Vectorcall(self->empty, args, 3, NULL);
}

/* whether a and b have equal shapes: 1, 0, or -1 an error */
static int same_shape(PyObject *a, PyObject *b)
{
    PyObject *sa = PyObject_GetAttr(a, s_shape);
    if (sa == NULL)
        return -1;
    PyObject *sb = PyObject_GetAttr(b, s_shape);
    if (sb == NULL) {
        Py_DECREF(sa);
        return -1;
    }
    int r = PyObject_RichCompareBool(sa, sb, Py_EQ);
    Py_DECREF(sa);
    Py_DECREF(sb);
    return r;
}

/* whether ``a`` is an array of the backend's type and of ``dtype``, compared by identity
 * (NumPy's built-in dtypes are singletons, and the call's dtypes outlive it): 1, 0, or -1
 * an error */
static int array_of(const CommonCall *self, PyObject *a, PyObject *dtype)
{
    if (Py_TYPE(a) != (PyTypeObject *)self->ndarray)
        return 0;
    PyObject *dt = PyObject_GetAttr(a, s_dtype);
    if (dt == NULL)
        return -1;
    Py_DECREF(dt); /* identity only */
    return dt == dtype;
}

/* out given: the scan's dtype, m elements (1-D, or for a scan of rows x's shape),
 * contiguous, aligned, apart from x (at, at_off) and from the segments' array (seg_at,
 * seg_bytes bytes; none where 0); 1 with where it is in *to and *to_off (array_at), 0 not
 * so, -1 an error */
static int usable_out(CommonCall *self, PyObject *x, uintptr_t at, uint64_t at_off, PyObject *out, Py_ssize_t m,
                      int rows, uintptr_t seg_at, Py_ssize_t seg_bytes, uintptr_t *to, uint64_t *to_off)
{
    int is = array_of(self, out, self->dtype);
    if (is <= 0)
        return is;
    Py_ssize_t v = ssize_attr(out, s_ndim);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v != 1) {
        if (!rows)
            return 0;
        int same = same_shape(out, x);
        if (same <= 0)
            return same;
    }
    v = ssize_attr(out, s_size);
    if (v != m)
        return (v == -1 && PyErr_Occurred()) ? -1 : 0;
    int flag = contiguous(self, out);
    if (flag <= 0)
        return flag;
    *to = array_at(self, out, to_off);
    if (*to == 0)
        return PyErr_Occurred() ? -1 : 0;
    if (misaligned(self, *to, *to_off))
        return 0;
    Py_ssize_t xbytes = ssize_attr(x, s_nbytes);
    if (xbytes == -1 && PyErr_Occurred())
        return -1;
    uint64_t bytes = (uint64_t)(m * self->osize);
    if (overlap(self, *to, *to_off, bytes, at, at_off, (uint64_t)xbytes))
        return 0;
    return !(seg_bytes && overlap(self, *to, *to_off, bytes, seg_at, 0, (uint64_t)seg_bytes));
}

/* the segments' array of a form call: an array of one of ``types`` (by identity), 1-D,
 * contiguous, at the start of its buffer (one kernel argument); its element count (0: not
 * so, -1: an error) and where it is in *at */
static Py_ssize_t segments_of(const CommonCall *self, PyObject *types, PyObject *seg, uintptr_t *at)
{
    if (Py_TYPE(seg) != (PyTypeObject *)self->ndarray)
        return 0;
    PyObject *dt = PyObject_GetAttr(seg, s_dtype);
    if (dt == NULL)
        return -1;
    Py_DECREF(dt); /* identity only: NumPy's built-in dtypes are singletons, as the tuple's */
    int known = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(types); i++)
        known |= PyTuple_GET_ITEM(types, i) == dt;
    if (!known)
        return 0;
    Py_ssize_t v = ssize_attr(seg, s_ndim);
    if (v != 1)
        return (v == -1 && PyErr_Occurred()) ? -1 : 0;
    int flag = contiguous(self, seg);
    if (flag <= 0)
        return flag;
    Py_ssize_t size = ssize_attr(seg, s_size);
    if (size <= 0)
        return (size == -1 && PyErr_Occurred()) ? -1 : 0;
    uint64_t off = 0;
    *at = array_at(self, seg, &off);
    if (*at == 0)
        return PyErr_Occurred() ? -1 : 0;
    return off ? 0 : size;
}

/* a Scratch's buffer where it holds ``need`` bytes: 1 with it in *buf, 0 not so, -1 an error */
static int scratch_holds(PyObject *scratch, Py_ssize_t need, uint64_t *buf)
{
    Py_ssize_t room = ssize_attr(scratch, s_nbytes);
    if (room == -1 && PyErr_Occurred())
        return -1;
    if (need > room)
        return 0;
    PyObject *b = PyObject_GetAttr(scratch, s_buf);
    if (b == NULL)
        return -1;
    *buf = handle_of(b); /* CUDA's pointer, OpenCL's buffer */
    Py_DECREF(b);
    return PyErr_Occurred() ? -1 : 1;
}

/* One call's values, as the launch takes them: its size and tiles (and the pre-pass's
 * groups), where the arrays are (a tuple value's in field order; on OpenCL each its
 * buffer and its offset in elements), the segments' array and count slot, a carry's words */
typedef struct {
    Py_ssize_t n, tiles, pre_groups;
    uintptr_t at[MAX_FIELDS], to[MAX_FIELDS];
    uintptr_t seg_at;
    uint64_t segn;
    int carried;
    uint64_t words[CARRY_WORDS];
    int opencl;
    uint64_t at_off[MAX_FIELDS], to_off[MAX_FIELDS];
    uint64_t at_len[MAX_FIELDS], to_len[MAX_FIELDS]; /* a transform's arrays' elements */
    int watch; /* copy the alarm's flag back after the launches (Launch.watch_read) */
} Args;

/* a block's slots as ``fill`` says: each code's value, a tuple value's arrays in turn (on
 * OpenCL an array's offset in the slot after its buffer's, which remember() checked is
 * one no other fills), a transform's array's length after it */
static void fill_slots(uint64_t *a, const Fill *fill, int nfill, const uint64_t value[ARG_COUNT], const Args *c)
{
    int src = 0, dst = 0;
    uint64_t len = 0; /* the last array's elements */
    for (int k = 0; k < nfill; k++) {
        uint64_t *slot = a + fill[k].at;
        switch (fill[k].code) {
        case ARG_SRC:
            if (c->opencl)
                slot[1] = c->at_off[src];
            len = c->at_len[src];
            *slot = c->at[src++];
            break;
        case ARG_DST:
            if (c->opencl)
                slot[1] = c->to_off[dst];
            len = c->to_len[dst];
            *slot = c->to[dst++];
            break;
        case ARG_LEN: *slot = len; break;
        default: *slot = value[fill[k].code]; break; /* remember() let no other in */
        }
    }
}

/* One launch of ``groups`` workgroups of ``threads``, on ``queue`` (CUDA's stream, OpenCL's
 * command queue), without the GIL and with the queue's lock held: on CUDA, of ``function``
 * and its argument block (``params`` points at its slots); on OpenCL, of the kernel object
 * ``function`` with the values in ``slots``, of which it sets the memory objects and the
 * scalars that changed since its last launch: ``params`` is the kernel's table
 * (compiled.py's kernel_table: how many arguments, each one's bytes, the values last set,
 * whether they are). 0 launched, else the API's error (OpenCL's: the table then says none
 * is set). */
static int launch_one(const CommonCall *self, void *function, void **params, const uint64_t *slots,
                      unsigned threads, unsigned groups, void *queue)
{
    if (self->api == API_CUDA)
        return self->launch(function, groups, 1, 1, threads, 1, 1, 0, queue, params, NULL);
    uint64_t *table = (uint64_t *)params, nargs = table[0];
    uint64_t *bytes = table + 1, *held = bytes + nargs, *set = held + nargs;
    for (uint64_t i = 0; i < nargs; i++) {
        /* a memory object's every time: another object may have its handle (kernel_table) */
        if (*set && held[i] == slots[i] && !(bytes[i] & MEMORY_BIT))
            continue;
        /* a buffer's handle or a scalar, little-endian: a 4-byte argument is the low half */
        int32_t status = self->set_arg(function, (uint32_t)i, (size_t)(bytes[i] & ~MEMORY_BIT), slots + i);
        if (status) {
            *set = 0;
            return status;
        }
        held[i] = slots[i];
    }
    *set = 1;
    size_t local = threads, global = (size_t)groups * threads;
    return self->enqueue(queue, function, 1, NULL, &global, &local, 0, NULL, NULL);
}

/* ``count`` launches in turn on CUDA's ``stream``, as one graph: built once for these kernels
 * and shapes of workgroup, then given each call's workgroups and arguments (its nodes'
 * parameters, which the driver copies: a launch in flight keeps its own). A launch by
 * offsets with its pre-pass is two launches, a reduction in stages four, and one
 * cuLaunchKernel costs the host about as much as the graph's launch. Without the GIL. 0
 * launched, else the driver's error (-1: no graph; the launches are then made one by one) */
static int launch_graph(CommonCall *self, int count, void *const fn[], void **const params[],
                        const unsigned threads[], const unsigned groups[], void *stream)
{
    KernelNode p[2 + MAX_STAGES];
    memset(p, 0, sizeof p);
    for (int k = 0; k < count; k++) {
        p[k].func = fn[k];
        p[k].gx = groups[k];
        p[k].gy = p[k].gz = p[k].by = p[k].bz = 1;
        p[k].bx = threads[k];
        p[k].params = params[k];
    }
    PyThread_acquire_lock(self->graph_lock, WAIT_LOCK);
    Graph *gr = NULL;
    for (int j = 0; j < GRAPHS && gr == NULL; j++) {
        Graph *h = self->graph + j;
        int same = h->exec != NULL && h->nodes == count;
        for (int k = 0; same && k < count; k++)
            same = h->node_fn[k] == fn[k] && h->node_threads[k] == threads[k];
        if (same)
            gr = h;
    }
    int status = 0;
    if (gr != NULL) {
        for (int k = 0; k < count && status == 0; k++)
            status = self->g.set(gr->exec, gr->node[k], p + k);
    } else {
        gr = self->graph + self->graph_next;
        self->graph_next = (self->graph_next + 1) % GRAPHS;
        drop_graph(self, gr);
        status = self->g.create(&gr->graph, 0);
        for (int k = 0; k < count && status == 0; k++) /* a chain: each after the one before */
            status = self->g.add(gr->node + k, gr->graph, k ? gr->node + k - 1 : NULL, k ? 1 : 0, p + k);
        if (status == 0)
            status = self->g.instantiate(&gr->exec, gr->graph, 0);
        if (status == 0) {
            gr->nodes = count;
            memcpy(gr->node_fn, fn, count * sizeof fn[0]);
            memcpy(gr->node_threads, threads, count * sizeof threads[0]);
        } else { /* no graphs for this call (the launches go one by one from now on) */
            drop_graphs(self);
            self->graphs = 0;
            status = -1;
        }
    }
    if (status == 0)
        status = self->g.launch(gr->exec, stream);
    PyThread_release_lock(self->graph_lock);
    return status;
}

/* The launch of ``c`` under the queue's lock, taken without waiting (see the top of this
 * file): 1 launched, 0 not (left to Python, nothing done), -1 an error */
static int fire_locked(CommonCall *self, const Launch *l, const Args *c)
{
    PyObject *got = PyObject_CallOneArg(l->acquire, Py_False);
    if (got == NULL)
        return -1;
    Py_DECREF(got);
    if (got != Py_True)
        return 0;
    int launched = 0, mode = l->mode, stages = mode == MODE_STAGES;
    PyObject *e = NULL;
    uint64_t scratch = 0, first = 0, open = 0;
    /* by offsets: the tiles search them (the offsets in the table's slot), or the pre-pass */
    int prepass = (mode == MODE_OFFSETS || stages) && c->tiles > l->search_tiles;
    /* a buffer to grow is Python's */
    if (scratch_holds(l->scratch, l->header + c->tiles * l->per_tile, &scratch) <= 0)
        goto done;
    if (prepass && scratch_holds(l->first, (c->tiles + 1) * 8, &first) <= 0)
        goto done;
    if (stages && scratch_holds(l->open, c->tiles * l->open_per_tile, &open) <= 0)
        goto done;
    if (mode == MODE_OFFSETS && !prepass)
        first = c->seg_at;
    unsigned long long epoch = 0;
    if (!stages) { /* a stage's scratch is a spine, of no epoch */
        e = PyObject_GetAttr(l->scratch, s_epoch);
        if (e == NULL)
            goto done;
        epoch = PyLong_AsUnsignedLongLong(e) + 1;
        Py_CLEAR(e);
        if (PyErr_Occurred() || epoch > l->limit)
            goto done; /* past the limit the tags would overflow: Python zeroes the buffer */
        e = PyLong_FromUnsignedLongLong(epoch);
        if (e == NULL || PyObject_SetAttr(l->scratch, s_epoch, e) < 0)
            goto done;
    }
    /* each slot as the record says; a constant stays as the launcher packed it (under this
     * lock, as everything written here); a tuple value's arrays in turn */
    uint64_t *a = l->slots;
    uint64_t code = c->n < l->stream_from ? l->code : l->stream_code;
    if (c->carried) {
        code |= l->carry_code;
        for (int k = 0; k < CARRY_WORDS; k++)
            a[l->carry_at[k]] = c->words[k];
    }
    uint64_t value[ARG_COUNT] = {0};
    value[ARG_N] = (uint64_t)c->n;
    value[ARG_SCRATCH] = value[ARG_SPINE] = scratch;
    value[ARG_CODE] = code;
    value[ARG_EPOCH] = epoch;
    value[ARG_SEG] = c->seg_at;
    value[ARG_FIRST] = first;
    value[ARG_SEGN] = c->segn;
    value[ARG_TILES] = (uint64_t)c->tiles;
    value[ARG_OPEN] = open;
    fill_slots(a, l->fill, l->nfill, value, c);
    unsigned groups[MAX_STAGES] = {0};
    for (int k = 0; k < l->nstages; k++) {
        const Stage *st = l->stage + k;
        fill_slots(st->slots, st->fill, st->nfill, value, c);
        Py_ssize_t g = st->groups == GROUPS_ONE ? 1
                       : st->groups == GROUPS_TILES ? c->tiles
                                                     : (c->tiles + st->threads - 1) / st->threads;
        groups[k] = (unsigned)g; /* at most tiles, which launch_as bounded */
    }
    if (prepass) { /* the pre-pass: its constants (the alarm, the check) packed once */
        l->pre_slots[0] = c->seg_at;
        l->pre_slots[1] = c->segn;
        l->pre_slots[2] = (uint64_t)c->n;
        l->pre_slots[3] = first;
    }
    /* without the GIL, as CuPy launches: a full launch queue blocks here, and a host
     * function in the stream may need the GIL to run. The argument blocks are the lock's,
     * and the record (held by fast()) keeps them alive. A launch that fails launches
     * nothing: Python's path then launches, or raises (a thread without a context binds one
     * there); the epoch skipped is never reused (launches made before a failed one are
     * launched again: each writes what it wrote, from what comes before it) */
    int status = 0, graphed = 0;
    int32_t copied = 0;
    Py_BEGIN_ALLOW_THREADS
    if (prepass && self->graphs) { /* by offsets with the pre-pass, or in stages */
        void *fn[2 + MAX_STAGES] = {l->pre_function, l->function};
        void **params[2 + MAX_STAGES] = {l->pre_params, l->params};
        unsigned threads[2 + MAX_STAGES] = {l->pre_threads, l->threads};
        unsigned counts[2 + MAX_STAGES] = {(unsigned)c->pre_groups, (unsigned)c->tiles};
        for (int k = 0; k < l->nstages; k++) {
            fn[2 + k] = l->stage[k].function;
            params[2 + k] = l->stage[k].params;
            threads[2 + k] = l->stage[k].threads;
            counts[2 + k] = groups[k];
        }
        status = launch_graph(self, 2 + l->nstages, fn, params, threads, counts, l->hstream);
        graphed = status != -1;
        if (!graphed)
            status = 0;
    }
    if (!graphed) {
        if (prepass)
            status = launch_one(self, l->pre_function, l->pre_params, l->pre_slots, l->pre_threads,
                                (unsigned)c->pre_groups, l->hstream);
        if (status == 0)
            status = launch_one(self, l->function, l->params, l->slots, l->threads, (unsigned)c->tiles, l->hstream);
        for (int k = 0; k < l->nstages && status == 0; k++)
            status = launch_one(self, l->stage[k].function, l->stage[k].params, l->stage[k].slots,
                                l->stage[k].threads, groups[k], l->hstream);
    }
    /* the alarm's flag to the host, in queue order after the check that may set it; no
     * event: the host reads what has arrived (a flag is only ever set) */
    if (status == 0 && c->watch)
        copied = l->watch_read(l->hstream, (void *)(uintptr_t)l->watch_mem, 0, 0, 4, (void *)(uintptr_t)l->flag, 0,
                               NULL, NULL);
    Py_END_ALLOW_THREADS
    launched = status == 0;
    if (copied) /* launched, and the host would not learn of bad offsets: raise, as Python's */
        PyErr_Format(PyExc_RuntimeError, "clEnqueueReadBuffer of the offsets alarm's flag failed: OpenCL error %d",
                     (int)copied);
done:
    Py_XDECREF(e);
    {
        PyObject *type, *value, *trace; /* an error set meanwhile waits out the release */
        PyErr_Fetch(&type, &value, &trace);
        PyObject *r = PyObject_CallNoArgs(l->release);
        if (r == NULL) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(trace);
            return -1;
        }
        Py_DECREF(r);
        PyErr_Restore(type, value, trace);
    }
    return PyErr_Occurred() ? -1 : launched;
}

/* a tuple value's arrays (MODE_FIELDS): every field in memory an array of its dtype, 1-D,
 * contiguous, aligned, all of one length n > 0; 1 with n and where they are (in field
 * order, index fields left out: array_at's, offsets in bytes) in *n, at[], off[], and the
 * first of them in *first (borrowed), 0 not so, -1 an error */
static int fields_of(CommonCall *self, PyObject *x, Py_ssize_t *n, uintptr_t at[MAX_FIELDS], uint64_t off[MAX_FIELDS],
                     Py_ssize_t *nin, Py_ssize_t bytes[MAX_FIELDS], PyObject **first)
{
    if (!PyTuple_CheckExact(x) || PyTuple_GET_SIZE(x) != self->nfields)
        return 0;
    *n = -1;
    *nin = 0;
    for (Py_ssize_t k = 0; k < self->nfields; k++) {
        PyObject *want = PyTuple_GET_ITEM(self->fields, k), *a = PyTuple_GET_ITEM(x, k);
        if (want == Py_None)
            continue; /* an index field: a position, not an array */
        int is = array_of(self, a, want);
        if (is <= 0)
            return is;
        Py_ssize_t v = ssize_attr(a, s_ndim);
        if (v != 1)
            return (v == -1 && PyErr_Occurred()) ? -1 : 0;
        int flag = contiguous(self, a);
        if (flag <= 0)
            return flag;
        Py_ssize_t size = ssize_attr(a, s_size);
        if (size == -1 && PyErr_Occurred())
            return -1;
        if (size <= 0 || (*n >= 0 && size != *n))
            return 0;
        *n = size;
        uintptr_t p = array_at(self, a, off + *nin);
        if (p == 0)
            return PyErr_Occurred() ? -1 : 0;
        if (misaligned(self, p, off[*nin]))
            return 0;
        Py_ssize_t nb = ssize_attr(a, s_nbytes);
        if (nb == -1 && PyErr_Occurred())
            return -1;
        if (*nin == 0)
            *first = a;
        at[*nin] = p;
        bytes[(*nin)++] = nb;
    }
    return *n > 0;
}

/* out given for a tuple value: one array a field written (a lone one, or a tuple of
 * them), each of its field's dtype, 1-D, n elements, contiguous, aligned, apart from every
 * input; 1 with their pointers in to[], 0 not so, -1 an error */
static int fields_out(CommonCall *self, PyObject *out, Py_ssize_t n, const uintptr_t at[], const uint64_t off[],
                      const Py_ssize_t bytes[], Py_ssize_t nin, uintptr_t to[MAX_FIELDS], uint64_t to_off[MAX_FIELDS])
{
    int lone = !PyTuple_CheckExact(out);
    if ((lone && self->nout != 1) || (!lone && PyTuple_GET_SIZE(out) != self->nout))
        return 0;
    for (Py_ssize_t j = 0; j < self->nout; j++) {
        PyObject *o = lone ? out : PyTuple_GET_ITEM(out, j);
        int is = array_of(self, o, PyTuple_GET_ITEM(self->outputs, j));
        if (is <= 0)
            return is;
        Py_ssize_t v = ssize_attr(o, s_ndim);
        if (v != 1)
            return (v == -1 && PyErr_Occurred()) ? -1 : 0;
        v = ssize_attr(o, s_size);
        if (v != n)
            return (v == -1 && PyErr_Occurred()) ? -1 : 0;
        int flag = contiguous(self, o);
        if (flag <= 0)
            return flag;
        to[j] = array_at(self, o, to_off + j);
        if (to[j] == 0)
            return PyErr_Occurred() ? -1 : 0;
        if (misaligned(self, to[j], to_off[j]))
            return 0;
        uint64_t nbytes = (uint64_t)(n * self->out_size[j]);
        for (Py_ssize_t i = 0; i < nin; i++)
            if (overlap(self, to[j], to_off[j], nbytes, at[i], off[i], (uint64_t)bytes[i]))
                return 0;
    }
    return 1;
}

/* launch_as() of a tuple value (MODE_FIELDS): x a tuple of the fields' arrays, out one
 * array a field written (a lone one where one is), or None; its result the tuple of the
 * written fields' arrays, as the Python call's */
static PyObject *launch_fields(CommonCall *self, const Launch *l, PyObject *x, PyObject *out, PyObject *carry)
{
    if (carry != NULL || self->one)
        return NULL; /* tuple values take no carry; a reduction's is Python's */
    Args c = {0};
    Py_ssize_t bytes[MAX_FIELDS], nin = 0;
    uint64_t off[MAX_FIELDS] = {0}, to_off[MAX_FIELDS] = {0}; /* in bytes */
    PyObject *first = NULL;
    if (fields_of(self, x, &c.n, c.at, off, &nin, bytes, &first) <= 0)
        return NULL;
    if (!(l->lo < c.n && c.n <= l->hi))
        return NULL;
    if (out != Py_None && fields_out(self, out, c.n, c.at, off, bytes, nin, c.to, to_off) <= 0)
        return NULL;
    if (same_queue(self, l, first) <= 0)
        return NULL;
    c.tiles = (c.n + l->tile - 1) / l->tile;
    if ((size_t)c.tiles > UINT_MAX)
        return NULL;
    /* the results: the given arrays, or new ones (before the lock, as Python's) */
    PyObject *result = PyTuple_New(self->nout);
    if (result == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < self->nout; j++) {
        PyObject *o;
        if (out == Py_None) {
            PyObject *shape = Py_BuildValue("(n)", c.n);
            if (shape == NULL) {
                Py_DECREF(result);
                return NULL;
            }
            o = new_array(self, l, shape, PyTuple_GET_ITEM(self->outputs, j));
            Py_DECREF(shape);
            if (o == NULL || (c.to[j] = array_at(self, o, to_off + j)) == 0) {
                Py_XDECREF(o);
                Py_DECREF(result);
                return NULL;
            }
        } else {
            o = Py_NewRef(PyTuple_CheckExact(out) ? PyTuple_GET_ITEM(out, j) : out);
        }
        PyTuple_SET_ITEM(result, j, o); /* steals it */
    }
    c.opencl = self->api == API_OPENCL;
    for (Py_ssize_t i = 0; i < nin; i++) /* OpenCL's offsets, in elements */
        c.at_off[i] = off[i] / (uint64_t)(bytes[i] / c.n);
    for (Py_ssize_t j = 0; j < self->nout; j++)
        c.to_off[j] = to_off[j] / (uint64_t)self->out_size[j];
    if (fire_locked(self, l, &c) <= 0)
        Py_CLEAR(result);
    return result;
}

/* a transform's array (MODE_TRANSFORM): one of ``dtype``, C-contiguous, of at least one
 * element, as TransformScan's callers hand it; 1 with where it is (array_at's) and its
 * elements, 0 not so, -1 an error */
static int transform_array(CommonCall *self, PyObject *a, PyObject *dtype, uintptr_t *at, uint64_t *off,
                           uint64_t *len)
{
    int is = array_of(self, a, dtype);
    if (is <= 0)
        return is;
    int flag = contiguous(self, a);
    if (flag <= 0)
        return flag;
    Py_ssize_t size = ssize_attr(a, s_size);
    if (size <= 0)
        return (size == -1 && PyErr_Occurred()) ? -1 : 0;
    if ((*at = array_at(self, a, off)) == 0)
        return PyErr_Occurred() ? -1 : 0;
    if (*off) { /* OpenCL's offset, in elements (its bytes over its count) */
        Py_ssize_t nb = ssize_attr(a, s_nbytes);
        if (nb <= 0)
            return (nb == -1 && PyErr_Occurred()) ? -1 : 0;
        *off /= (uint64_t)(nb / size);
    }
    *len = (uint64_t)size;
    return 1;
}

/* A transform's call (MODE_TRANSFORM): TransformScan(reads, writes, n, queue) in
 * plan/transformed.py, of arrays as its callers hand them (a list or tuple of each, in the
 * transform's order), n elements, on the queue of the launch remembered (by identity:
 * CUDA's CudaQueue, OpenCL's command queue). Py_None launched; NULL with an exception set,
 * an error; without, the call is Python's (nothing done). */
static PyObject *launch_transform(CommonCall *self, const Launch *l, PyObject *const *args)
{
    if (args[3] != l->stream || !PyLong_CheckExact(args[2]))
        return NULL;
    if (!(PyList_CheckExact(args[0]) || PyTuple_CheckExact(args[0])) ||
        !(PyList_CheckExact(args[1]) || PyTuple_CheckExact(args[1])))
        return NULL;
    Args c = {0};
    c.n = PyLong_AsSsize_t(args[2]);
    if (c.n == -1 && PyErr_Occurred()) {
        PyErr_Clear(); /* past a Py_ssize_t: Python's */
        return NULL;
    }
    if (!(l->lo < c.n && c.n <= l->hi))
        return NULL;
    /* the arrays as tuples: a list another thread changes while an attribute's lookup lets it
     * run stays as it was here */
    PyObject *reads = PySequence_Tuple(args[0]), *writes = reads ? PySequence_Tuple(args[1]) : NULL;
    PyObject *result = NULL;
    if (writes == NULL || PyTuple_GET_SIZE(reads) != self->nfields || PyTuple_GET_SIZE(writes) != self->nout)
        goto done;
    for (Py_ssize_t k = 0; k < self->nfields; k++)
        if (transform_array(self, PyTuple_GET_ITEM(reads, k), PyTuple_GET_ITEM(self->fields, k), c.at + k,
                            c.at_off + k, c.at_len + k) <= 0)
            goto done;
    for (Py_ssize_t k = 0; k < self->nout; k++)
        if (transform_array(self, PyTuple_GET_ITEM(writes, k), PyTuple_GET_ITEM(self->outputs, k), c.to + k,
                            c.to_off + k, c.to_len + k) <= 0)
            goto done;
    c.tiles = (c.n + l->tile - 1) / l->tile;
    if ((size_t)c.tiles > UINT_MAX)
        goto done;
    c.opencl = self->api == API_OPENCL;
    if (fire_locked(self, l, &c) > 0)
        result = Py_NewRef(Py_None);
done:
    Py_XDECREF(reads);
    Py_XDECREF(writes);
    return result;
}

/* The launch ``l``, if this call is of its kind: its result (a new reference), or NULL:
 * with an exception set, an error; without, not this one's call (nothing done). A form
 * call passes its segments' array (``seg``: flags or offsets as the mode takes, else
 * NULL) and its row length. */
static PyObject *launch_as(CommonCall *self, const Launch *l, PyObject *x, PyObject *out, PyObject *seg,
                           Py_ssize_t row_len, PyObject *carry)
{
    int mode = l->mode;
    if (mode == MODE_FIELDS)
        return launch_fields(self, l, x, out, carry);
    /* a carry the host knows, in the launch's words; none in rows of whole tiles (the
     * plain program takes none there: Python's runs the other) */
    uint64_t words[CARRY_WORDS] = {0};
    if (carry != NULL) {
        Py_ssize_t len = PyBytes_GET_SIZE(carry);
        if (!l->carry_code || l->ncarry != CARRY_WORDS || len > 8 * CARRY_WORDS || (mode == MODE_ROWS && l->whole))
            return NULL;
        memcpy(words, PyBytes_AS_STRING(carry), (size_t)len); /* little-endian, as launch.py packs */
    }
    /* a reduction's result without out is a 0-d view of a new array: the backend's scalar() makes it */
    int view = out == Py_None && self->one && mode == MODE_PLAIN;
    if (Py_TYPE(x) != (PyTypeObject *)self->ndarray || (view && self->scalar == NULL))
        return NULL;
    int by_offsets = mode == MODE_OFFSETS || mode == MODE_STAGES;
    if (self->one && mode != MODE_PLAIN && !by_offsets)
        return NULL; /* a reduction by segments is by offsets */
    if (mode == MODE_STAGES && !self->one)
        return NULL; /* stages reduce */
    int flag = contiguous(self, x);
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
    uint64_t at_off = 0, to_off = 0; /* in bytes (OpenCL's) */
    uintptr_t at = array_at(self, x, &at_off), to = 0;
    if (at == 0 || misaligned(self, at, at_off))
        return NULL;

    /* the segments, as the mode takes them: their array, and what the kernel's count slot holds */
    Py_ssize_t m = self->one ? 1 : n; /* the result's length */
    int watch = 0;
    uintptr_t seg_at = 0;
    Py_ssize_t seg_bytes = 0;
    uint64_t segn = 0;
    if (mode == MODE_FLAGS) {
        Py_ssize_t k = segments_of(self, self->flag_types, seg, &seg_at);
        if (k != n) /* one flag a value (-1: an error, which stays set) */
            return NULL;
        seg_bytes = k;
    } else if (by_offsets) {
        Py_ssize_t k = segments_of(self, self->offset_types, seg, &seg_at);
        if (k <= 0)
            return NULL;
        seg_bytes = 8 * k;
        segn = (uint64_t)(k - 1);
        if (self->one && (m = k - 1) == 0)
            return NULL; /* no segment: Python's empty result */
        if (*l->flag)
            return NULL; /* an earlier call's offsets were bad: Python raises it */
        if (l->watch_read) { /* OpenCL's copy back, where it is due (not of offsets jitscan made) */
            PyObject *r = PyObject_CallOneArg(l->due, seg);
            if (r == NULL)
                return NULL;
            watch = r == Py_True;
            Py_DECREF(r);
        }
    } else if (mode == MODE_ROWS) {
        if (row_len <= 0 || n % row_len)
            return NULL;
        int whole = l->rows_tile > 0 && row_len % l->rows_tile == 0;
        if (whole != l->whole)
            return NULL;
        segn = (uint64_t)(whole ? row_len / l->tile : row_len);
        seg_at = at; /* the row length's unused buffer: the input's */
    }
    if (out != Py_None &&
        usable_out(self, x, at, at_off, out, m, mode == MODE_ROWS, seg_at, seg_bytes, &to, &to_off) <= 0)
        return NULL;

    /* the queue of the last call: the current stream, or the array's queue */
    if (same_queue(self, l, x) <= 0)
        return NULL;
    /* OpenCL: the input's offset in its elements (its bytes over its count) */
    uint64_t x_elem = 0;
    if (at_off) {
        Py_ssize_t xbytes = ssize_attr(x, s_nbytes);
        if (xbytes <= 0)
            return NULL;
        x_elem = at_off / (uint64_t)(xbytes / n);
    }

    Py_ssize_t tiles = (n + l->tile - 1) / l->tile;
    Py_ssize_t pre_groups = 0;
    if (by_offsets)
        pre_groups = ((tiles > (Py_ssize_t)segn ? tiles : (Py_ssize_t)segn) + 1 + l->pre_threads - 1) / l->pre_threads;
    if ((size_t)tiles > UINT_MAX || (size_t)pre_groups > UINT_MAX)
        return NULL; /* more groups than a launch takes: Python's raises */

    /* the result, where out is not given: as Python's call makes it (new_array), and
     * before the lock, as Python's (what it runs may start a scan of its own); a scan of
     * rows in the input's shape */
    PyObject *dst = NULL;
    if (out == Py_None) {
        PyObject *shape = mode == MODE_ROWS ? PyObject_GetAttr(x, s_shape) : Py_BuildValue("(n)", m);
        if (shape == NULL)
            return NULL;
        dst = new_array(self, l, shape, self->dtype);
        Py_DECREF(shape);
        if (dst == NULL)
            return NULL;
        if ((to = array_at(self, dst, &to_off)) == 0) {
            Py_DECREF(dst);
            return NULL;
        }
    }

    Args c = {n, tiles, pre_groups, {at}, {to}, seg_at, segn, carry != NULL, {0}};
    memcpy(c.words, words, sizeof words);
    c.opencl = self->api == API_OPENCL;
    c.watch = watch;
    c.at_off[0] = x_elem;
    c.to_off[0] = to_off / (uint64_t)self->osize;
    int launched = fire_locked(self, l, &c);
    PyObject *result = NULL;
    if (launched > 0)
        result = view ? PyObject_CallOneArg(self->scalar, dst) : Py_NewRef(out == Py_None ? dst : out);
    Py_XDECREF(dst);
    return result;
}

/* launch_as() with the last launch; a copy of it, since the Python calls made meanwhile
 * (the stream, the lock, the result) may let another thread remember another */
static PyObject *fast(CommonCall *self, PyObject *x, PyObject *out, PyObject *carry)
{
    if (self->last.record == NULL)
        return NULL;
    Launch l = self->last;
    Py_INCREF(l.record);
    PyObject *result = launch_as(self, &l, x, out, NULL, 0, carry);
    Py_DECREF(l.record);
    return result;
}

/* a form call (x, out, flags, offsets, row_len) as the last launch's mode takes it: the
 * others of flags, offsets and row_len None or 0, as FormCalls._form_common asks */
static PyObject *fast_form(CommonCall *self, PyObject *const *args, PyObject *carry)
{
    if (self->last.record == NULL || !PyLong_CheckExact(args[4]))
        return NULL;
    Py_ssize_t row_len = PyLong_AsSsize_t(args[4]);
    if (row_len == -1 && PyErr_Occurred()) {
        PyErr_Clear(); /* past a Py_ssize_t: Python's */
        return NULL;
    }
    PyObject *flags = args[2], *offsets = args[3], *seg = NULL;
    Launch l = self->last;
    switch (l.mode) {
    case MODE_FLAGS:
        if (offsets != Py_None || row_len)
            return NULL;
        seg = flags;
        break;
    case MODE_OFFSETS:
    case MODE_STAGES:
        if (flags != Py_None || row_len)
            return NULL;
        seg = offsets;
        break;
    case MODE_ROWS:
        if (flags != Py_None || offsets != Py_None)
            return NULL;
        break;
    case MODE_FIELDS:
        if (flags != Py_None || offsets != Py_None || row_len)
            return NULL;
        break;
    default:
        return NULL;
    }
    Py_INCREF(l.record);
    PyObject *result = launch_as(self, &l, args[0], args[1], seg, row_len, carry);
    Py_DECREF(l.record);
    return result;
}

/* a transform's call with the last launch (a copy of it, as fast() takes) */
static PyObject *fast_transform(CommonCall *self, PyObject *const *args)
{
    if (self->last.record == NULL)
        return NULL;
    Launch l = self->last;
    Py_INCREF(l.record);
    PyObject *result = launch_transform(self, &l, args);
    Py_DECREF(l.record);
    return result;
}

static PyObject *call(CommonCall *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t want = self->transform ? 4 : self->form ? 6 : 3;
    if (nargs != want || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, self->transform ? "a transform's call takes (reads, writes, n, queue)"
                                         : self->form    ? "a form call takes (x, out, flags, offsets, row_len, carry)"
                                                         : "a common call takes (x, out, carry)");
        return NULL;
    }
    if (self->slow == NULL) { /* cleared by the collector, and called by a finalizer */
        PyErr_SetString(PyExc_ReferenceError, "a common call that was cleared");
        return NULL;
    }
    if (self->transform) {
        PyObject *result = fast_transform(self, args);
        if (result != NULL || PyErr_Occurred())
            return result;
        return PyObject_Vectorcall(self->slow, args, (size_t)want, NULL);
    }
    PyObject *carry = args[want - 1];
    if (carry == Py_None || PyBytes_CheckExact(carry)) { /* a carry on the device is Python's */
        carry = carry == Py_None ? NULL : carry;
        PyObject *result = self->form ? fast_form(self, args, carry) : fast(self, args[0], args[1], carry);
        if (result != NULL || PyErr_Occurred())
            return result;
    }
    return PyObject_Vectorcall(self->slow, args, (size_t)want, NULL);
}

static PyObject *remember(CommonCall *self, PyObject *record)
{
    /* record: None, or (stream, lo, hi, load, acquire, release, scratch, tile, header,
     * per_tile, limit, code, stream_code, stream_from, codes, function, params, slots,
     * hstream, threads, carry_code, keep): the size class, the lock's methods, the Scratch, the plan's
     * tiles and scratch bytes (header + tiles * per_tile) and largest epoch, the launch's
     * code below and from stream_from elements, a byte per slot of the argument block
     * saying what it holds, the launcher's function, block and stream, and the bits a carry
     * in the launch's words sets (0: none goes there); keep holds
     * what the addresses point into */
    if (record == Py_None) {
        forget(self);
        Py_RETURN_NONE;
    }
    unsigned long long lo, hi, limit, code, stream_code, function, params, slots, hstream, carry_code;
    Py_ssize_t tile, header, per_tile, stream_from;
    unsigned threads;
    PyObject *stream, *load, *acquire, *release, *scratch, *codes, *keep, *form = NULL;
    if (!PyArg_ParseTuple(record, self->form ? "OKKOOOOnnnKKKnSKKKKIKOO!:remember" : "OKKOOOOnnnKKKnSKKKKIKO:remember",
                          &stream, &lo, &hi, &load, &acquire, &release, &scratch, &tile, &header, &per_tile,
                          &limit, &code, &stream_code, &stream_from, &codes, &function, &params, &slots, &hstream,
                          &threads, &carry_code, &keep, &PyTuple_Type, &form))
        return NULL;
    /* a form call's: (mode, whole, rows_tile, first, pre_function, pre_params, pre_slots,
     * pre_threads, flag, search_tiles), and in stages (open, open_per_tile, stages), each
     * stage (function, params, slots, threads, groups, codes): see Launch and Stage */
    int mode = MODE_PLAIN, whole = 0;
    Py_ssize_t rows_tile = 0, search_tiles = 0, open_per_tile = 0;
    PyObject *first = NULL, *open = NULL, *stages = NULL, *watch = NULL;
    unsigned long long pre_function = 0, pre_params = 0, pre_slots = 0, flag = 0, watch_read = 0, watch_mem = 0;
    PyObject *due = NULL;
    unsigned pre_threads = 0;
    if (form != NULL) {
        if (!PyArg_ParseTuple(form, "ipnOKKKIKn|OnOO:remember", &mode, &whole, &rows_tile, &first, &pre_function,
                              &pre_params, &pre_slots, &pre_threads, &flag, &search_tiles, &open, &open_per_tile,
                              &stages, &watch))
            return NULL;
        if (stages == Py_None)
            stages = NULL;
        if (stages != NULL && !PyTuple_Check(stages)) {
            PyErr_SetString(PyExc_TypeError, "remember: the stages are a tuple, or None");
            return NULL;
        }
        /* OpenCL's copy of the alarm's flag: (clEnqueueReadBuffer, the flag's buffer, due), or None */
        if (watch != NULL && watch != Py_None &&
            !PyArg_ParseTuple(watch, "KKO:remember", &watch_read, &watch_mem, &due))
            return NULL;
        if (watch_read && (!watch_mem || !PyCallable_Check(due) || self->api != API_OPENCL)) {
            PyErr_SetString(PyExc_ValueError, "remember: an OpenCL alarm's read, its buffer and a due()");
            return NULL;
        }
        int offsets = mode == MODE_OFFSETS || mode == MODE_STAGES;
        int staged = mode == MODE_STAGES;
        if (mode < MODE_FLAGS || mode > MODE_TRANSFORM || (mode == MODE_FIELDS && !self->nfields) ||
            (mode == MODE_TRANSFORM) != self->transform || rows_tile < 0 || search_tiles < 0 ||
            (whole && rows_tile != tile) ||
            (offsets && (!pre_function || !pre_params || !pre_slots || !pre_threads || !flag)) ||
            staged != (stages != NULL) ||
            (staged && (search_tiles || open_per_tile <= 0 || PyTuple_GET_SIZE(stages) > MAX_STAGES))) {
            PyErr_SetString(PyExc_ValueError, "remember: a form of the segments' modes, whole rows of the "
                                              "launch's tile, a pre-pass and alarm by offsets, stages of a "
                                              "reduction in stages alone, a transform's call its own");
            return NULL;
        }
    }
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
    if (nslots > 255) {
        PyErr_SetString(PyExc_ValueError, "remember: more slots than a kernel takes");
        return NULL;
    }
    /* OpenCL: as many slots as the kernel's table has arguments (the values' block is as long) */
    if (self->api == API_OPENCL && (!params || ((const uint64_t *)(uintptr_t)params)[0] != (uint64_t)nslots)) {
        PyErr_SetString(PyExc_ValueError, "remember: an OpenCL kernel's table of as many arguments as slots");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nslots; i++) {
        /* a carry's words stay as the launcher packed them, as constants do: a launch
         * without JS_CARRY_ARGS_BIT reads none of them (a carry is Python's); so does the
         * queue's alarm of a launch by offsets (the same buffers on every call) */
        int alarm = (mode == MODE_OFFSETS || mode == MODE_STAGES) && (c[i] == ARG_WORD || c[i] == ARG_FLAG);
        int kept = c[i] == ARG_CONST || c[i] == ARG_CARRY || alarm;
        int segs = c[i] > ARG_CONST && c[i] < ARG_CARRY && mode != MODE_PLAIN && mode != MODE_FIELDS &&
                   mode != MODE_TRANSFORM;
        /* a stage's own: its tiles' count, the spine, the open segments' partials (not its
         * epoch, scratch or code: a spine has none) */
        int staged = mode == MODE_STAGES;
        if (staged && (c[i] == ARG_SCRATCH || c[i] == ARG_CODE || c[i] == ARG_EPOCH || c[i] == ARG_CARRY)) {
            PyErr_SetString(PyExc_ValueError, "remember: a slot code a launch in stages does not take");
            return NULL;
        }
        segs = segs || (staged && c[i] >= ARG_TILES && c[i] <= ARG_OPEN);
        /* a tuple value's arrays: one slot a field in memory, one a field written; a
         * transform's, each with its length two slots on (after its offset's) */
        int arrays = (mode == MODE_FIELDS || mode == MODE_TRANSFORM) && (c[i] == ARG_SRC || c[i] == ARG_DST);
        int lens = mode == MODE_TRANSFORM && c[i] == ARG_LEN;
        /* (fill_slots fills a length with the last array's: its own, after its offset's slot) */
        if (lens && (i < 2 || (c[i - 2] != ARG_SRC && c[i - 2] != ARG_DST) || c[i - 1] != ARG_CONST)) {
            PyErr_SetString(PyExc_ValueError, "remember: a transform's array's length two slots after it");
            return NULL;
        }
        if (c[i] >= ARG_COUNT || (c[i] > ARG_CONST && !segs && !kept && !lens) ||
            (!kept && !arrays && !lens && seen[c[i]]++)) {
            PyErr_SetString(PyExc_ValueError, "remember: a slot code not known, or given twice");
            return NULL;
        }
        if (c[i] == ARG_CARRY && l.ncarry < CARRY_WORDS)
            l.carry_at[l.ncarry++] = i;
        else if (c[i] == ARG_CARRY) {
            PyErr_SetString(PyExc_ValueError, "remember: more carry words than a launch takes");
            return NULL;
        }
        /* OpenCL: an array's offset goes in the slot after its buffer's, a constant's of
         * the codes (compiled.arg_codes) that no call fills in */
        if (self->api == API_OPENCL && (c[i] == ARG_SRC || c[i] == ARG_DST) &&
            (i + 1 >= nslots || c[i + 1] != ARG_CONST)) {
            PyErr_SetString(PyExc_ValueError, "remember: an OpenCL array's slot, then its offset's");
            return NULL;
        }
        if (!kept) {
            if (l.nfill >= ARG_COUNT + 4 * MAX_FIELDS) {
                PyErr_SetString(PyExc_ValueError, "remember: more slots filled than a launch takes");
                return NULL;
            }
            l.fill[l.nfill].at = i;
            l.fill[l.nfill++].code = c[i];
            seen[c[i]] += arrays || lens;
        }
    }
    if (mode == MODE_FIELDS) { /* the arrays' slots are the fields' */
        Py_ssize_t nin = 0;
        for (Py_ssize_t k = 0; k < self->nfields; k++)
            nin += PyTuple_GET_ITEM(self->fields, k) != Py_None;
        if (seen[ARG_SRC] != nin || seen[ARG_DST] != self->nout) {
            PyErr_SetString(PyExc_ValueError, "remember: a slot code not known, or given twice (the fields' arrays)");
            return NULL;
        }
    }
    if (mode == MODE_TRANSFORM && (seen[ARG_SRC] != self->nfields || seen[ARG_DST] != self->nout ||
                                   seen[ARG_LEN] != self->nfields + self->nout)) {
        PyErr_SetString(PyExc_ValueError, "remember: a slot and a length for each array the transform reads and writes");
        return NULL;
    }
    for (Py_ssize_t k = 0; stages != NULL && k < PyTuple_GET_SIZE(stages); k++) {
        Stage *st = l.stage + k;
        unsigned long long function = 0, params = 0, slots = 0;
        PyObject *scodes;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(stages, k), "KKKIiS:remember", &function, &params, &slots,
                              &st->threads, &st->groups, &scodes))
            return NULL;
        const unsigned char *sc = (const unsigned char *)PyBytes_AS_STRING(scodes);
        Py_ssize_t count = PyBytes_GET_SIZE(scodes);
        int once[ARG_COUNT] = {0}, bad = !function || !params || !slots || !st->threads || count > ARG_COUNT;
        bad = bad || (self->api == API_OPENCL && ((const uint64_t *)(uintptr_t)params)[0] != (uint64_t)count);
        bad = bad || st->groups < GROUPS_TILES || st->groups > GROUPS_TILES_PER_THREAD;
        for (Py_ssize_t i = 0; i < count && !bad; i++) {
            /* a stage's slots: the arrays, the count, the segments' and the stages' own, or
             * kept as packed (constants, the alarm); each filled one at most once */
            int kept = sc[i] == ARG_CONST || sc[i] == ARG_WORD || sc[i] == ARG_FLAG;
            int takes = sc[i] == ARG_SRC || sc[i] == ARG_DST || sc[i] == ARG_N || sc[i] == ARG_SEG ||
                        sc[i] == ARG_FIRST || sc[i] == ARG_SEGN || (sc[i] >= ARG_TILES && sc[i] <= ARG_OPEN);
            bad = !(kept || takes) || (takes && once[sc[i]]++);
            /* OpenCL: an array's offset in the slot after (see above) */
            bad = bad || (self->api == API_OPENCL && (sc[i] == ARG_SRC || sc[i] == ARG_DST) &&
                          (i + 1 >= count || sc[i + 1] != ARG_CONST));
            if (takes && !bad) {
                st->fill[st->nfill].at = i;
                st->fill[st->nfill++].code = sc[i];
            }
        }
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "remember: a stage of a function, a block, threads, a rule for its "
                                              "workgroups and slot codes it takes, each at most once");
            return NULL;
        }
        st->function = (void *)(uintptr_t)function;
        st->params = (void **)(uintptr_t)params;
        st->slots = (uint64_t *)(uintptr_t)slots;
        l.nstages++;
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
    l.carry_code = carry_code;
    l.function = (void *)(uintptr_t)function;
    l.params = (void **)(uintptr_t)params;
    l.hstream = (void *)(uintptr_t)hstream;
    l.slots = (uint64_t *)(uintptr_t)slots;
    l.threads = threads;
    l.mode = mode;
    l.whole = whole;
    l.rows_tile = rows_tile;
    l.search_tiles = search_tiles;
    l.first = first;
    l.pre_function = (void *)(uintptr_t)pre_function;
    l.pre_params = (void **)(uintptr_t)pre_params;
    l.pre_slots = (uint64_t *)(uintptr_t)pre_slots;
    l.pre_threads = pre_threads;
    l.flag = (volatile const uint32_t *)(uintptr_t)flag;
    l.watch_read = (cl_read_fn)(uintptr_t)watch_read;
    l.watch_mem = watch_mem;
    l.due = watch_read ? due : NULL; /* borrowed from the record, as the others */
    l.open = open;
    l.open_per_tile = open_per_tile;
    PyObject *old = self->last.record;
    self->last = l;
    Py_XDECREF(old); /* last: what it frees may run code, even another remember() */
    Py_RETURN_NONE;
}

static PyObject *new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *ndarray, *dtype, *loads, *stream_of, *slow, *flag_types = NULL, *offset_types = NULL;
    PyObject *fields = NULL, *outputs = NULL, *empty = NULL, *buffer_types = NULL, *graph = NULL, *transform = NULL;
    PyObject *scalar = NULL;
    Py_ssize_t osize, align;
    int one, form = 0, api = API_CUDA;
    unsigned long long launch, set_arg = 0;
    static char *names[] = {"ndarray", "dtype",   "loads",        "stream_of", "slow",   "osize",
                            "align",   "one",     "launch",       "form",      "flag_types",
                            "offset_types",       "fields",       "outputs",   "api",    "set_arg",
                            "empty",   "buffer_types", "graph", "transform", "scalar", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!OOnnpK|pO!O!O!O!iKOO!O!O!O:CommonCall", names, &ndarray,
                                     &dtype, &PyDict_Type, &loads, &stream_of, &slow, &osize, &align, &one, &launch,
                                     &form, &PyTuple_Type, &flag_types, &PyTuple_Type, &offset_types,
                                     &PyTuple_Type, &fields, &PyTuple_Type, &outputs, &api, &set_arg, &empty,
                                     &PyTuple_Type, &buffer_types, &PyTuple_Type, &graph, &PyTuple_Type, &transform,
                                     &scalar))
        return NULL;
    if (scalar == Py_None)
        scalar = NULL;
    if (scalar != NULL && (!PyCallable_Check(scalar) || !one || form)) {
        PyErr_SetString(PyExc_ValueError, "CommonCall: scalar is a plain reduction's, a callable");
        return NULL;
    }
    /* a transform's call: the dtypes of the arrays it reads and of those it writes, kept
     * where a tuple value keeps its fields' and the written ones' */
    if (transform != NULL) {
        if (fields != NULL || outputs != NULL || !form || one || PyTuple_GET_SIZE(transform) != 2 ||
            !PyTuple_Check(PyTuple_GET_ITEM(transform, 0)) || !PyTuple_Check(PyTuple_GET_ITEM(transform, 1))) {
            PyErr_SetString(PyExc_ValueError, "CommonCall: a transform's call is a form call of (reads, writes): "
                                              "the dtypes of the arrays it reads and writes");
            return NULL;
        }
        fields = PyTuple_GET_ITEM(transform, 0);
        outputs = PyTuple_GET_ITEM(transform, 1);
        Py_ssize_t nr = PyTuple_GET_SIZE(fields), nw = PyTuple_GET_SIZE(outputs);
        if (!nr || !nw || nr > MAX_FIELDS || nw > MAX_FIELDS) {
            PyErr_SetString(PyExc_ValueError, "CommonCall: a transform reads and writes 1 to 8 arrays each");
            return NULL;
        }
        for (Py_ssize_t k = 0; k < nr; k++)
            if (PyTuple_GET_ITEM(fields, k) == Py_None) {
                PyErr_SetString(PyExc_ValueError, "CommonCall: a transform's arrays are each of a dtype");
                return NULL;
            }
    }
    /* CUDA's graph entry points, in GraphApi's order (launch_graph) */
    void *graph_fns[7] = {0};
    if (graph != NULL) {
        if (api != API_CUDA || PyTuple_GET_SIZE(graph) != 7) {
            PyErr_SetString(PyExc_ValueError, "CommonCall: graph is CUDA's, seven addresses");
            return NULL;
        }
        for (int k = 0; k < 7; k++) {
            graph_fns[k] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(graph, k));
            if (graph_fns[k] == NULL) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "CommonCall: a graph entry point's address is 0");
                return NULL;
            }
        }
    }
    /* OpenCL's: clEnqueueNDRangeKernel (launch) and clSetKernelArg, the backend's empty(),
     * the buffer types of base_data */
    if (api != API_CUDA && (api != API_OPENCL || !set_arg || empty == NULL || !PyCallable_Check(empty) ||
                            buffer_types == NULL)) {
        PyErr_SetString(PyExc_ValueError, "CommonCall: api is CUDA's (0), or OpenCL's (1) with set_arg, "
                                          "empty and buffer_types");
        return NULL;
    }
    /* a tuple value's: each field's dtype (None: an index field), the written fields'
     * dtypes (an index field's too: its positions' integer type) */
    Py_ssize_t nfields = fields ? PyTuple_GET_SIZE(fields) : 0, nout = outputs ? PyTuple_GET_SIZE(outputs) : 0;
    Py_ssize_t out_size[MAX_FIELDS] = {0};
    if ((fields == NULL) != (outputs == NULL) || nfields > MAX_FIELDS || nout > MAX_FIELDS ||
        (fields && !transform && (!nout || nout > nfields))) {
        PyErr_SetString(PyExc_ValueError, "CommonCall: a tuple value's fields (at most 8) and the ones written");
        return NULL;
    }
    for (Py_ssize_t j = 0; j < nout; j++) {
        PyObject *size = PyObject_GetAttrString(PyTuple_GET_ITEM(outputs, j), "itemsize");
        if (size == NULL)
            return NULL;
        out_size[j] = PyLong_AsSsize_t(size);
        Py_DECREF(size);
        if (out_size[j] == -1 && PyErr_Occurred())
            return NULL;
        if (out_size[j] <= 0) {
            PyErr_SetString(PyExc_ValueError, "CommonCall: a field written is a dtype");
            return NULL;
        }
    }
    if (form && (flag_types == NULL || offset_types == NULL)) {
        PyErr_SetString(PyExc_ValueError, "CommonCall: a form call names the dtypes of flags and offsets");
        return NULL;
    }
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
    self->scalar = Py_XNewRef(scalar);
    self->form = form;
    self->transform = transform != NULL;
    self->fields = fields ? Py_NewRef(fields) : PyTuple_New(0);
    self->nfields = nfields;
    self->nout = nout;
    self->outputs = outputs ? Py_NewRef(outputs) : PyTuple_New(0);
    memcpy(self->out_size, out_size, sizeof out_size);
    self->flag_types = form ? Py_NewRef(flag_types) : PyTuple_New(0);
    self->offset_types = form ? Py_NewRef(offset_types) : PyTuple_New(0);
    if (self->flag_types == NULL || self->offset_types == NULL || self->fields == NULL || self->outputs == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->osize = osize;
    self->align = align;
    self->one = one;
    self->api = api;
    if (api == API_CUDA) {
        self->launch = (launch_fn)(uintptr_t)launch;
        if (graph != NULL) {
            if ((self->graph_lock = PyThread_allocate_lock()) == NULL) {
                Py_DECREF(self);
                return PyErr_NoMemory();
            }
            self->g = (GraphApi){(graph_create_fn)graph_fns[0], (graph_add_fn)graph_fns[1],
                                 (graph_instantiate_fn)graph_fns[2], (graph_set_fn)graph_fns[3],
                                 (graph_launch_fn)graph_fns[4], (graph_destroy_fn)graph_fns[5],
                                 (graph_destroy_fn)graph_fns[6]};
            self->graphs = 1;
        }
    } else {
        self->enqueue = (cl_enqueue_fn)(uintptr_t)launch;
        self->set_arg = (cl_set_arg_fn)(uintptr_t)set_arg;
        self->empty = Py_NewRef(empty);
        self->buffer_types = Py_NewRef(buffer_types);
    }
    return (PyObject *)self;
}

static PyObject *tp_call_(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(self, args, kwargs);
}

static PyMethodDef methods[] = {
    {"remember", (PyCFunction)remember, METH_O,
     "remember(record): what the next call may reuse (a tuple, see _common_call.c), or None."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CommonCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "jitscan.backends._common_call.CommonCall",
    .tp_doc = "A prepared scan's common call on CUDA or OpenCL, compiled: call(x, out, carry), or with form=True "
              "call(x, out, flags, offsets, row_len, carry), or with transform= call(reads, writes, n, queue).",
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
    .m_name = "_common_call",
    .m_doc = "The common call of a prepared scan on CUDA or OpenCL, compiled.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__common_call(void)
{
    struct {
        PyObject **slot;
        const char *text;
    } names[] = {{&s_c_contiguous, "_c_contiguous"}, {&s_dtype, "dtype"}, {&s_size, "size"},
                 {&s_data, "data"}, {&s_ptr, "ptr"}, {&s_ndim, "ndim"}, {&s_nbytes, "nbytes"},
                 {&s_epoch, "epoch"}, {&s_buf, "buf"}, {&s_shape, "shape"}, {&s_flags, "flags"},
                 {&s_contiguous, "c_contiguous"}, {&s_base_data, "base_data"}, {&s_int_ptr, "int_ptr"},
                 {&s_offset, "offset"}, {&s_queue, "queue"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    if (PyType_Ready(&CommonCallType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    /* what compiled.py checks before it uses this module: an older build's remember() would
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
