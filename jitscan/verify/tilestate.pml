/* tilestate.pml: the tile-state protocol of jitscan's chained scans, for SPIN.
 *
 * What it models (kernels/src/tile_state.h, lookback.h, chained.c; docs/design.md,
 * "Chained protocol" and "Tile state"):
 *   - N tiles (N 3 by default; 2 and 4 check too), one process each. A process takes
 *     its tile from an atomic counter (tiles numbered in the order they start), posts its
 *     aggregate READY (tile 0: INCLUSIVE), walks its predecessors nearest first, combining
 *     READY values on the left and stopping at an INCLUSIVE one, then posts INCLUSIVE.
 *   - DYNAMIC_IDS 1 (the default) takes tiles from the counter as chained.c does; 0 gives
 *     process k tile k-1. Taking a ticket writes nothing else and moves to the front of
 *     any run, so both give the same runs up to renaming the processes; 0 saves the N!
 *     ways of pairing processes with tiles (N 4: 0.9 rather than 23 million states).
 *   - A descriptor is NW words: 2 for the split encoding (ENCODING 0, the default), so
 *     a reader can catch a posting half done, 1 for packed (ENCODING 1). A word is a byte:
 *     epoch (1 bit: this launch or an earlier one) | flag (2 bits) | a part of the value,
 *     the tag above the value as in js_state_word. Every write is one atomic max on one
 *     word, every read one load of one word, each a separate step, so every interleaving
 *     of multi-word postings, readings and insertions is explored.
 *   - Values are intervals [lo, hi] of the tiles combined; [a, b] op [b+1, c] = [a, c],
 *     anything else fails an assertion. The operator is associative and not commutative,
 *     so a value taken out of order, twice, or missed is caught. In the split encoding
 *     each word holds the value's 4-bit code XOR a mask of its own, so a torn value (the
 *     parts of two postings side by side) never decodes; in real bits a torn value is as
 *     wrong, but may look plausible.
 *   - Words left by earlier launches (STALE 1, the default): every word starts either
 *     zeroed or as a word of the previous epoch flagged INCLUSIVE holding junk; they must
 *     read as NOT_READY (js_flag_of) and must not look INCLUSIVE to an insertion.
 *   - FALLBACK 1 (decoupled fallback): after a NOT_READY read the walker may give up
 *     waiting at once or spin again, at most SPINS times in a row on one predecessor
 *     (a nondeterministic choice: every spin limit below SPINS at once). Spinning writes
 *     nothing, so a run with more spins is a run of this model with the extra reads
 *     deleted (the walker was slow instead): SPINS 1 (0 even) covers every spin_limit,
 *     and a finite one is what makes every fallback run end. Giving up
 *     reduces the stalled tile's input (its aggregate, a constant here), inserts it with
 *     atomic max word by word (js_insert), takes the INCLUSIVE value found there when every
 *     word was INCLUSIVE, else the aggregate, and walks on.
 *   - FALLBACK 0 (decoupled look-back): a NOT_READY predecessor is waited on forever.
 *   - BROKEN_READER 1: a reader that looks at word 0's flag alone; SPIN must then find
 *     the torn-value assertion failing (split encoding), which shows it can fail.
 *   - REORDER 1 (optional): posters and readers take the words of a descriptor in either
 *     order, a first step towards loads and stores reordered across words.
 *
 * Properties (no fairness assumed; weak fairness stays off):
 *   - safety (pan without -a, compiled with -DNOCLAIM): a value accepted by a reader or
 *     found INCLUSIVE by an insertion is exactly what was posted with that flag (no torn
 *     value), every combination is in order, every tile posts INCLUSIVE [0, t], and when
 *     all tiles are done every word of every descriptor is INCLUSIVE with the right part.
 *   - termination (pan -a with the ltl claim below): every run ends with all tiles done.
 *     It holds for FALLBACK 1; for FALLBACK 0 SPIN finds a run where a tile spins forever
 *     on a predecessor that the scheduler never runs again (the look-back watchdog,
 *     which would end that run with a DeadlockError, is not modeled). The one SPIN
 *     finds first (split, N 3) has the predecessor stopped between the two words of its
 *     INCLUSIVE posting: a descriptor that was READY reads NOT_READY again until the
 *     owner's second word lands, so an owner stalled there blocks look-back too.
 *
 * What it does not cover:
 *   - memory models weaker than SPIN's interleaving (sequential consistency) of relaxed
 *     atomics: no non-multi-copy-atomic or stale loads beyond what REORDER gives. The
 *     reader's soundness argument (all flags agree, and a (tile, flag) pair has one value
 *     whoever posted it, every word only moving forward) does not depend on the order in
 *     which the words are seen, and that argument is what the model checks;
 *   - compilers, the workgroup's threads, barriers, local memory and the steps' two-slot
 *     word: a tile is one sequential process (thread 0's view);
 *   - the windowed walks (serial, one subgroup, wide): modeled as one predecessor read
 *     at a time, the walk restarting after each; a window's reads are such reads taken
 *     close together, and its in-register fold is not modeled;
 *   - the look-back watchdog and the deadlock flag, simulated blocking (block_every),
 *     rows (row_tiles), segmented scans (the head bit "extra" of the tag), deterministic
 *     scans, the counter's rewind for the next launch, epoch overflow and the host's
 *     zeroing of the buffer;
 *   - values: abstract intervals of at most 4 tiles, not bits of a data type.
 */

#ifndef N
#define N 3
#endif
#ifndef FALLBACK
#define FALLBACK 1
#endif
#ifndef ENCODING
#define ENCODING 0 /* 0 split (2 words a descriptor), 1 packed (1 word) */
#endif
#ifndef BROKEN_READER
#define BROKEN_READER 0
#endif
#ifndef STALE
#define STALE 1
#endif
#ifndef SPINS
#define SPINS 1
#endif
#ifndef REORDER
#define REORDER 0
#endif
#ifndef DYNAMIC_IDS
#define DYNAMIC_IDS 1
#endif

/* a value's code is 4 bits, [lo, hi] as lo | hi << 2. Packed: the code in one word.
 * Split: word p holds the code XOR MASK(p), so that a mix of two values' parts never
 * decodes: a torn value (a part of one value beside a part of another) is always caught,
 * also where real bits would tear into a plausible number. */
#if ENCODING == 0
#define NW 2
#define MASK(p) ((p) * 15)
#define ENCV(c) ((c) | ((c) ^ 15) << 4)
#else
#define NW 1
#define MASK(p) 0
#define ENCV(c) (c)
#endif
#define PMASK 15

#define NOT_READY 0
#define READY 1
#define INCLUSIVE 2

/* a word: epoch bit 64 (this launch; 0 an earlier one) | flag << 4 | part (4 bits) */
#define CUR 64
#define WORD(f, code, p) (CUR | (f) << 4 | ((code) ^ MASK(p)))
#define FLAG_OF(x) (((x) & CUR) -> (((x) >> 4) & 3) : NOT_READY)
#define PART_OF(x) ((x) & PMASK)
/* an earlier launch's word p: INCLUSIVE, holding its part of [1, 3] (no tile's value) */
#define STALE_WORD(p) (INCLUSIVE << 4 | (IV(1, 3) ^ MASK(p)))

/* values: [lo, hi] as lo | hi << 2; a read assembles the parts into ENCV(code) */
#define IV(lo, hi) ((lo) | (hi) << 2)
#define LO(v) ((v) & 3)
#define HI(v) (((v) >> 2) & 3)
#define DECODES(v) ((v) == ENCV((v) & 15))

byte w[N * NW];  /* the descriptors, tile j in w[j*NW .. j*NW+NW-1] */
byte ticket;     /* the tile counter */
byte ndone;      /* tiles that posted INCLUSIVE and finished */

#define all_done (ndone == N)
ltl terminates { <> all_done }

/* atomic max of descriptor j's word p to WORD(f, code, p) */
inline post_word(j, f, code, p) {
  d_step {
    nw = WORD(f, code, p);
    if
    :: nw > w[j * NW + p] -> w[j * NW + p] = nw
    :: else
    fi;
    nw = 0
  }
}

/* js_post: one atomic max per word */
inline post(j, f, code) {
#if NW == 2 && REORDER
  if
  :: post_word(j, f, code, 0); post_word(j, f, code, 1)
  :: post_word(j, f, code, 1); post_word(j, f, code, 0)
  fi
#elif NW == 2
  post_word(j, f, code, 0); post_word(j, f, code, 1)
#else
  post_word(j, f, code, 0)
#endif
}

/* one load of descriptor j's word p, folded into the read so far (rf, rv): the
 * first word read sets the flag, a word that disagrees makes it NOT_READY */
inline read_word(j, p, first) {
  d_step {
    f1 = FLAG_OF(w[j * NW + p]);
#if BROKEN_READER
    if
    :: p == 0 -> rf = f1
    :: else
    fi;
#else
    if
    :: first -> rf = f1
    :: !first && f1 != rf -> rf = NOT_READY
    :: else
    fi;
#endif
    rv = rv | PART_OF(w[j * NW + p]) << (4 * p);
    f1 = 0
  }
}

/* js_read of descriptor j into (rf, rv); an accepted value must be what was posted */
inline read_desc(j) {
#if NW == 2 && REORDER
  if
  :: read_word(j, 0, 1); read_word(j, 1, 0)
  :: read_word(j, 1, 1); read_word(j, 0, 0)
  fi;
#elif NW == 2
  read_word(j, 0, 1); read_word(j, 1, 0);
#else
  read_word(j, 0, 1);
#endif
  /* no torn value: READY is tile j's aggregate, INCLUSIVE its inclusive prefix */
  assert(rf == NOT_READY || rf == READY && rv == ENCV(IV(j, j)) || rf == INCLUSIVE && rv == ENCV(IV(0, j)))
}

/* js_insert: atomic max of READY aggregate into each word of descriptor j; (allinc, rv)
 * as *inclusive and *found */
inline insert_word(j, p) {
  d_step {
    nw = WORD(READY, IV(j, j), p);
    f1 = FLAG_OF(w[j * NW + p]);
    if
    :: f1 != INCLUSIVE -> allinc = 0
    :: else
    fi;
    rv = rv | PART_OF(w[j * NW + p]) << (4 * p);
    if
    :: nw > w[j * NW + p] -> w[j * NW + p] = nw
    :: else
    fi;
    nw = 0;
    f1 = 0
  }
}

inline insert(j) {
  allinc = 1;
#if NW == 2 && REORDER
  if
  :: insert_word(j, 0); insert_word(j, 1)
  :: insert_word(j, 1); insert_word(j, 0)
  fi;
#elif NW == 2
  insert_word(j, 0); insert_word(j, 1);
#else
  insert_word(j, 0);
#endif
  assert(!allinc || rv == ENCV(IV(0, j)))
}

/* js_walk_take: prefix = v op prefix, v on the left */
inline take(v) {
  d_step {
    assert(DECODES(v) && LO(v) <= HI(v));
    if
    :: have -> assert(HI(v) + 1 == plo); plo = LO(v)
    :: else -> plo = LO(v); phi = HI(v); have = 1
    fi
  }
}

proctype tile() {
  byte t;          /* this tile */
  short cur;       /* the predecessor the walk is at */
  byte plo, phi;   /* the prefix walked so far, [plo, phi] */
  bit have;        /* the prefix holds something */
  byte spins;      /* consecutive NOT_READY reads of cur */
  byte rf, rv;     /* a read's flag and value */
  byte nw, f1;     /* scratch of one atomic step */
  bit allinc;      /* the insertion found every word INCLUSIVE */

#if DYNAMIC_IDS
  d_step { t = ticket; ticket++ };
#else
  t = _pid - 1;  /* init is pid 0 */
#endif
  if
  :: t == 0 ->
     post(t, INCLUSIVE, IV(0, 0))
  :: else ->
     post(t, READY, IV(t, t));
     cur = t - 1;
     do
     :: read_desc(cur);
        if
        :: rf == READY ->
           take(rv);
           d_step { rf = 0; rv = 0; spins = 0; cur-- };
           if
           :: cur < 0 -> break
           :: else
           fi
        :: rf == INCLUSIVE ->
           take(rv);
           d_step { rf = 0; rv = 0; spins = 0 };
           break
        :: rf == NOT_READY ->
           rv = 0;
#if FALLBACK
           if
           :: spins < SPINS -> spins++   /* spin again */
           :: true ->                    /* give up waiting: reduce tile cur and insert it */
              spins = 0;
              insert(cur);
              if
              :: allinc -> take(rv)
              :: else -> take(ENCV(IV(cur, cur)))
              fi;
              d_step { rv = 0; cur-- };
              if
              :: allinc || cur < 0 -> allinc = 0; break
              :: else
              fi
           fi
#else
           skip                          /* spin */
#endif
        fi
     od;
     /* the inclusive prefix: prefix op own aggregate */
     assert(have && phi + 1 == t && plo == 0);
     post(t, INCLUSIVE, IV(plo, t))
  fi;
  d_step {
    ndone++;
    if
    :: ndone == N ->
       /* the end: every word of every descriptor INCLUSIVE [0, j], this launch's */
       rf = 0;
       do
       :: rf < N ->
          rv = 0;
          do
          :: rv < NW -> assert(w[rf * NW + rv] == WORD(INCLUSIVE, IV(0, rf), rv)); rv++
          :: else -> break
          od;
          rf++
       :: else -> break
       od;
       rf = 0; rv = 0
    :: else
    fi
  }
}

init {
  atomic {
    byte i;
#if STALE
    for (i : 0 .. N * NW - 1) {
      if
      :: w[i] = 0
      :: w[i] = STALE_WORD(i % NW)
      fi
    }
#endif
    for (i : 1 .. N) {
      run tile()
    }
    i = 0
  }
}
