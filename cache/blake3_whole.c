/* Vantage cache: BLAKE3 of a whole buffer at once; see blake3_whole.h.

   The reference hasher's update() must hold back the last chunk until finalize, so it hashes what
   precedes it in power-of-two subtrees (for 63 chunks and a part: 32, 16, 8, 4, 2, 1), and the
   small ones run at narrow SIMD degrees or one chunk at a time: 64 KiB less 176 bytes takes twice
   as long as 64 KiB. Knowing the whole input, this hashes every full chunk through
   blake3_hash_many in batches of 16 (the AVX-512 degree; a short batch is padded with copies of the
   first input, whose outputs are dropped), the last partial chunk block by block, and then the tree
   level by level, pairing neighbours and carrying an odd one up, which is BLAKE3's left-balanced
   tree; the root is compressed with the ROOT flag. The result is the standard hash (tested against
   the reference hasher at every size to 5000 bytes and many beyond, and against the Rust crate's
   values). Uses the C implementation's internal header (blake3_impl.h) of the sources Debian ships. */
#include "cache/blake3_whole.h"

#include <stdlib.h>
#include <string.h>

#include "blake3.h"
#include "blake3_impl.h"

enum { kDegree = 16, kStack = 144 }; /* 144 CVs: inputs of up to 143 chunks need no allocation */

static size_t round_up(size_t n) { return (n + kDegree - 1) / kDegree * kDegree; }

void vantage_blake3_whole(const uint8_t* in, size_t len, uint8_t out[32]) {
  const size_t full = len / BLAKE3_CHUNK_LEN, chunks = (len + BLAKE3_CHUNK_LEN - 1) / BLAKE3_CHUNK_LEN;
  if (chunks < kDegree) { /* too few chunks for a whole batch: the reference hasher does as well */
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, in, len);
    blake3_hasher_finalize(&h, out, BLAKE3_OUT_LEN);
    return;
  }
  const size_t cap = round_up(chunks) + kDegree;
  uint8_t cvs_stack[kStack * BLAKE3_OUT_LEN], next_stack[kStack * BLAKE3_OUT_LEN];
  const uint8_t* inputs_stack[kStack];
  uint8_t* cvs = cap <= kStack ? cvs_stack : (uint8_t*)malloc(cap * BLAKE3_OUT_LEN);
  uint8_t* next = cap <= kStack ? next_stack : (uint8_t*)malloc(cap * BLAKE3_OUT_LEN);
  const uint8_t** inputs = cap <= kStack ? inputs_stack : (const uint8_t**)malloc(cap * sizeof *inputs);
  if (!cvs || !next || !inputs) abort();

  /* The chunks' chaining values: the full chunks in batches, then the partial one. */
  const size_t batch = round_up(full);
  for (size_t i = 0; i < batch; ++i) inputs[i] = in + (i < full ? i : 0) * BLAKE3_CHUNK_LEN;
  blake3_hash_many(inputs, batch, BLAKE3_CHUNK_LEN / BLAKE3_BLOCK_LEN, IV, 0, true, 0, CHUNK_START, CHUNK_END, cvs);
  if (full < chunks) {
    uint32_t cv[8];
    memcpy(cv, IV, sizeof cv);
    const uint8_t* p = in + full * BLAKE3_CHUNK_LEN;
    const size_t rest = len - full * BLAKE3_CHUNK_LEN;
    for (size_t off = 0; off < rest; off += BLAKE3_BLOCK_LEN) {
      uint8_t block[BLAKE3_BLOCK_LEN] = {0};
      const size_t n = rest - off < BLAKE3_BLOCK_LEN ? rest - off : BLAKE3_BLOCK_LEN;
      memcpy(block, p + off, n);
      const uint8_t flags = (uint8_t)((off == 0 ? CHUNK_START : 0) | (off + n == rest ? CHUNK_END : 0));
      blake3_compress_in_place(cv, block, (uint8_t)n, full, flags);
    }
    store_cv_words(cvs + full * BLAKE3_OUT_LEN, cv);
  }

  /* The tree, a level at a time, down to the two children of the root. */
  for (size_t n = chunks; n > 2;) {
    const size_t pairs = n / 2, padded = round_up(pairs);
    for (size_t i = 0; i < padded; ++i) inputs[i] = cvs + (i < pairs ? i : 0) * 2 * BLAKE3_OUT_LEN;
    blake3_hash_many(inputs, padded, 1, IV, 0, false, PARENT, 0, 0, next);
    if (n & 1) memcpy(next + pairs * BLAKE3_OUT_LEN, cvs + (n - 1) * BLAKE3_OUT_LEN, BLAKE3_OUT_LEN);
    uint8_t* t = cvs;
    cvs = next;
    next = t;
    n = pairs + (n & 1);
  }
  uint32_t root[8];
  memcpy(root, IV, sizeof root);
  blake3_compress_in_place(root, cvs, BLAKE3_BLOCK_LEN, 0, PARENT | ROOT);
  store_cv_words(out, root);
  if (cap > kStack) {
    free(cvs);
    free(next);
    free((void*)inputs);
  }
}
