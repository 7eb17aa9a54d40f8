/* gnnd_client: the C ABI of gnnd's trainer client (what the Python package calls through ctypes).
 *
 * Opaque handles, one status enum (gRPC's codes plus GNND_END_OF_EPOCH), and gnnd_last_error() for the
 * message of the calling thread's last failure. A batch's arrays point into gnnd's slots: they stay valid
 * until the batch is released. Every entry point checks its handles (GNND_INVALID_ARGUMENT) and never
 * lets a C++ exception out (GNND_INTERNAL).
 *
 * Versioning: a caller built against major M works with a library of the same major and a minor at
 * least its own (compare gnnd_api_version() with GNND_API_VERSION). Structs the caller fills begin with
 * their size, so a newer library reads an older caller's struct (missing fields take their defaults). */
#ifndef GNND_CLIENT_H_
#define GNND_CLIENT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GNND_API __attribute__((visibility("default")))
#else
#define GNND_API
#endif

#define GNND_API_VERSION_MAJOR 1
#define GNND_API_VERSION_MINOR 13
#define GNND_API_VERSION (GNND_API_VERSION_MAJOR * 1000 + GNND_API_VERSION_MINOR)
/* The GNND_API_VERSION of the header the library was built with. */
GNND_API int32_t gnnd_api_version(void);

typedef enum gnnd_status {
  GNND_OK = 0,
  GNND_CANCELLED = 1,
  GNND_UNKNOWN = 2,
  GNND_INVALID_ARGUMENT = 3,
  GNND_DEADLINE_EXCEEDED = 4,
  GNND_NOT_FOUND = 5,
  GNND_ALREADY_EXISTS = 6,
  GNND_PERMISSION_DENIED = 7,
  GNND_RESOURCE_EXHAUSTED = 8,
  GNND_FAILED_PRECONDITION = 9,
  GNND_ABORTED = 10,
  GNND_OUT_OF_RANGE = 11,
  GNND_UNIMPLEMENTED = 12,
  GNND_INTERNAL = 13,
  GNND_UNAVAILABLE = 14, /* gnnd is not running, or went away */
  GNND_DATA_LOSS = 15,
  GNND_UNAUTHENTICATED = 16,
  GNND_END_OF_EPOCH = 100 /* gnnd_next_batch: the epoch has no more batches */
} gnnd_status;

typedef enum gnnd_dtype {
  GNND_INT32 = 0,
  GNND_INT64 = 1,
  GNND_FLOAT32 = 2,
  GNND_FLOAT16 = 3,
  GNND_BFLOAT16 = 4,
  GNND_FLOAT8_E4M3FN = 5, /* API 1.3 */
  GNND_BOOL = 6           /* API 1.12: one byte, 0 or 1 (node and edge attributes; DLPack: its bytes, uint8) */
} gnnd_dtype;

/* API 1.3: a dtype's name as torch spells it ("int32", "int64", "float32", "float16", "bfloat16",
 * "float8_e4m3fn", "bool"); NULL for a code this library does not know. */
GNND_API const char* gnnd_dtype_name(int32_t dtype);

/* DLPack's device codes. */
typedef enum gnnd_device_type { GNND_DEVICE_CPU = 1, GNND_DEVICE_CUDA = 2 } gnnd_device_type;

typedef struct gnnd_array {
  const char* name; /* gnnd_batch_array_name(i) for arrays[i] */
  void* data;
  int32_t dtype; /* gnnd_dtype */
  int32_t ndim;  /* 1 or 2 */
  int64_t shape[2];
  int32_t device_type; /* gnnd_device_type */
  int32_t device_id;
} gnnd_array;

/* A batch's arrays, in the order of the canonical layout: "node_ids", "num_nodes_per_hop", "edge_src",
 * "edge_dst", "num_edges_per_hop", "features", "labels". */
#define GNND_BATCH_ARRAYS 7
/* The name of arrays[index] (NULL outside [0, GNND_BATCH_ARRAYS)). */
GNND_API const char* gnnd_batch_array_name(int32_t index);

typedef struct gnnd_batch {
  int32_t slot; /* pass to gnnd_release_batch */
  uint64_t epoch;
  int64_t step;
  gnnd_array arrays[GNND_BATCH_ARRAYS];
} gnnd_batch;

/* API 1.2: the most hops (fanouts) a session may have. */
#define GNND_MAX_HOPS 16

/* API 1.2: a batch as counts, for callers that view each slot's arrays once (gnnd_slot_arrays) and slice
 * them per batch: node_ids and features hold num_nodes rows, edge_src and edge_dst num_edges, labels
 * num_seeds; num_nodes_per_hop and num_edges_per_hop (also copied here, in host memory) are whole. */
typedef struct gnnd_batch_counts {
  int32_t slot; /* pass to gnnd_release_batch, or as release_slot to the next gnnd_next_batch_counts */
  int32_t num_hops;
  uint64_t epoch;
  int64_t step;
  int64_t num_nodes;
  int64_t num_edges;
  int64_t num_seeds;
  int32_t num_nodes_per_hop[GNND_MAX_HOPS + 1]; /* [0, num_hops] are set */
  int32_t num_edges_per_hop[GNND_MAX_HOPS];     /* [0, num_hops) are set */
} gnnd_batch_counts;

typedef struct gnnd_session_options {
  size_t size; /* sizeof(gnnd_session_options) as the caller knows it: start from GNND_SESSION_OPTIONS_INIT */
  const char* dataset;
  const char* split; /* "train" (or NULL), "valid" or "test" */
  int64_t batch_size;
  const int32_t* fanouts; /* one per hop; -1 takes every in-neighbor */
  int32_t num_fanouts;
  uint64_t seed;
  uint64_t epoch; /* the first epoch */
  int32_t rank;
  int32_t world_size;
  int32_t shuffle;    /* nonzero: a new permutation every epoch */
  int32_t drop_last;  /* nonzero: drop the incomplete last batch */
  int32_t num_slots;  /* 0: gnnd's default */
  const char* device; /* "cpu" (or NULL), or "cuda:N" */
  /* API 1.1: the seeds to iterate (node ids; duplicates kept) instead of a split (leave `split` NULL). */
  const int64_t* seed_ids;
  int64_t num_seed_ids;
  /* API 1.4, typed datasets: the seeds' node type (NULL: the one type with splits); `split` and `seed_ids`
   * are then that type's. Per-relation fanouts: num_fanout_relations relation keys ("src___rel___dst", each
   * of the dataset's relations once), and `fanouts` holds num_fanout_relations rows of num_fanouts (one per
   * hop), row r for fanout_relations[r]. Without them, `fanouts` applies to every relation. */
  const char* node_type;
  const char* const* fanout_relations;
  int32_t num_fanout_relations;
  /* API 1.5, link prediction: the seeds are the edges of this edge split ("train", "valid" or "test"; leave
   * `split` and `seed_ids` NULL). neg_sampling: NULL or "none", "binary", "triplet", or "fixed" (the split's
   * own negatives, as triplets); neg_amount per positive (0: 1); strict_negatives nonzero: never an edge;
   * exclude: NULL or "none", "self", "reverse". The batch's arrays: node_ids .. features, input_id, and
   * edge_label_index (pairs x 2) with edge_label, or src_index, dst_pos_index, dst_neg_index (triplets). */
  const char* edge_split;
  const char* neg_sampling;
  int32_t neg_amount;
  int32_t strict_negatives;
  const char* exclude;
  /* API 1.6, link prediction on given pairs instead of an edge split (leave `edge_split`, `split` and
   * `seed_ids` NULL): 2 x num_seed_edges node ids, the sources then the destinations (PyG's (2, E)
   * edge_label_index), every pair a positive labeled 1. */
  const int64_t* seed_edges;
  int64_t num_seed_edges;
  /* API 1.7, link prediction on a typed dataset: the seed edges' relation, its key "src___rel___dst" (NULL:
   * the one relation with the edge split; seed_edges are then ids of its source and destination types).
   * The batch's arrays: the typed batch's ("T.node_ids", "R.edge_src", ...) and the pair arrays above. */
  const char* edge_type;
  /* API 1.8: seed_ids made from a boolean mask over the seed type's nodes: the mask's length, refused unless
   * it is that type's node count (0: the ids were given as ids). */
  int64_t seed_mask_length;
  /* API 1.10: nonzero: the caller takes slots added while the session runs. gnnd then sizes the slots' feature
   * rows by the batches it samples (far smaller than the bound for a typed graph), and when a batch needs
   * more it adds larger slots: that batch and the ones after it come in slots numbered from the
   * gnnd_session_slots() seen before on (view each new slot when a batch first names it); batches are the
   * same as without. Slot indices are never reused. */
  int32_t slots_may_grow;
  /* API 1.11: more of the open request, as OpenSession fields in protobuf text format (proto/gnnd/v1/
   * service.proto; e.g. "fanouts: 5 fanouts: 3" or a newer gnnd's sampling options): each field it names
   * replaces what the fields above set for it. NULL: none. A field this library's protocol does not know is
   * refused naming it. */
  const char* open_fields;
  /* API 1.13: the whole open request as OpenSession fields in protobuf text format, in place of every field
   * above but the arrays seed_ids and seed_edges (and their counts), which it may leave out and which are then
   * added to it; a field it leaves out has OpenSession's default (no split: name it). open_fields are read after it
   * and replace what it sets. NULL: the fields above make the request. */
  const char* request;
} gnnd_session_options;

/* Every option at its default: no dataset, the train split, 1024 seeds a batch, no fanouts (required),
 * seed 0, epoch 0, rank 0 of 1, shuffled, last batch kept, gnnd's number of slots, the CPU. */
#define GNND_SESSION_OPTIONS_INIT                                                                                     \
  {                                                                                                                   \
    sizeof(gnnd_session_options), NULL, NULL, 1024, NULL, 0, 0, 0, 0, 1, 1, 0, 0, NULL, NULL, 0, NULL, NULL, 0, NULL, \
        NULL, 0, 0, NULL, NULL, 0, NULL, 0, 0, NULL, NULL                                                             \
  }

typedef struct gnnd_client gnnd_client;
typedef struct gnnd_session gnnd_session;

/* Where gnnd is unless told otherwise: $GNND_ADDRESS, else "unix:/tmp/gnnd.sock". */
GNND_API const char* gnnd_default_address(void);
/* address: "unix:/path/to/gnnd.sock" or "host:port" (NULL: gnnd_default_address()); waits up to timeout_ms
 * for gnnd to answer. */
GNND_API gnnd_status gnnd_connect(const char* address, int32_t timeout_ms, gnnd_client** out);
GNND_API void gnnd_client_free(gnnd_client* client);

GNND_API gnnd_status gnnd_open_session(gnnd_client* client, const gnnd_session_options* options, gnnd_session** out);
/* Batches per epoch for this rank (-1 for a null session). */
GNND_API int64_t gnnd_session_steps(const gnnd_session* session);
/* API 1.1: the per-hop counts of the batch last given out in `slot`, in host memory (also for GPU sessions,
 * whose arrays are in GPU memory): num_nodes_per_hop[0..hops] and num_edges_per_hop[0..hops-1], each with
 * room for `capacity` entries. Returns hops, or -1 (null session, no batch in that slot, capacity < hops+1). */
GNND_API int32_t gnnd_batch_hop_counts(const gnnd_session* session, int32_t slot, int32_t* num_nodes_per_hop,
                                       int32_t* num_edges_per_hop, int32_t capacity);
/* Blocks until the next batch is ready; GNND_END_OF_EPOCH after the epoch's last one. */
GNND_API gnnd_status gnnd_next_batch(gnnd_session* session, gnnd_batch* out);
GNND_API gnnd_status gnnd_release_batch(gnnd_session* session, int32_t slot);
/* GPU sessions (device "cuda:N"): the arrays are in GPU memory. `cuda_stream` (a cudaStream_t, NULL for the
 * default stream) is made to wait for the batch's completion, without blocking the host; releasing records
 * the slot's "consumed" event on the stream, so gnnd overwrites it only after the work queued there. */
GNND_API gnnd_status gnnd_next_batch_on_stream(gnnd_session* session, void* cuda_stream, gnnd_batch* out);
GNND_API gnnd_status gnnd_release_batch_on_stream(gnnd_session* session, int32_t slot, void* cuda_stream);
/* API 1.2: the number of slots the session's batches come in so far (more once slots are added: API 1.10,
 * slots_may_grow); -1 for a null session. */
GNND_API int32_t gnnd_session_slots(const gnnd_session* session);
/* API 1.2: the arrays of `slot` (0 <= slot < gnnd_session_slots) at the slot's capacity: shape[0] is the
 * most rows a batch there can have. They stay at these addresses for the whole session, so a caller can
 * view them once and take each batch as a prefix of each (gnnd_batch_counts says how long). */
GNND_API gnnd_status gnnd_slot_arrays(const gnnd_session* session, int32_t slot, gnnd_array* out);
/* API 1.2: one call per batch: releases `release_slot` as gnnd_release_batch_on_stream does (none if it is
 * negative), then takes the next batch as gnnd_next_batch_on_stream does, as counts. */
GNND_API gnnd_status gnnd_next_batch_counts(gnnd_session* session, int32_t release_slot, void* cuda_stream,
                                            gnnd_batch_counts* out);
/* API 1.3: the batch as data. A session's batches hold gnnd_session_arrays() arrays, described by gnnd's
 * batch schema: array i has a name, a dtype, one or two dimensions, and in each batch as many rows as the
 * value of count info.count (one of gnnd_session_counts() named counts, e.g. "nodes"; each batch gives them
 * all in host memory, also for GPU sessions). Homogeneous node batches of a dataset with features and labels
 * have the seven arrays of gnnd_batch in its order; typed batches (API 1.4) name theirs per node type and
 * relation ("paper.node_ids", "author___writes___paper.edge_src", ...) and, as link batches and node batches
 * of a graph without features or labels (those arrays absent), are read only through these calls: on such
 * a session the calls that give gnnd_batch or gnnd_batch_counts fail with GNND_FAILED_PRECONDITION
 * (gnnd_batch_hop_counts returns -1). */
#define GNND_MAX_BATCH_COUNTS 1024
typedef struct gnnd_array_info {
  size_t size;      /* sizeof(gnnd_array_info) as the caller knows it */
  const char* name; /* valid until the session is closed */
  int32_t dtype;    /* gnnd_dtype */
  int32_t ndim;     /* 1, or 2: rows of row_width elements */
  int64_t row_width;
  int32_t count; /* the index of the count that gives its rows */
} gnnd_array_info;
typedef struct gnnd_batch_values {
  size_t size;  /* sizeof(gnnd_batch_values) as the caller knows it */
  int32_t slot; /* pass to gnnd_release_batch, or as release_slot to the next gnnd_next_batch_values */
  uint64_t epoch;
  int64_t step;
  int32_t num_counts;
  int64_t counts[GNND_MAX_BATCH_COUNTS]; /* [0, num_counts) are set */
} gnnd_batch_values;
/* The number of arrays and of counts of the session's batches (-1 for a null session). */
GNND_API int32_t gnnd_session_arrays(const gnnd_session* session);
GNND_API int32_t gnnd_session_counts(const gnnd_session* session);
/* The name of count `index`; NULL outside [0, gnnd_session_counts). */
GNND_API const char* gnnd_session_count_name(const gnnd_session* session, int32_t index);
GNND_API gnnd_status gnnd_session_array_info(const gnnd_session* session, int32_t index, gnnd_array_info* out);
/* Array `index` of `slot` at the slot's capacity (as gnnd_slot_arrays, by the schema's index). */
GNND_API gnnd_status gnnd_slot_array(const gnnd_session* session, int32_t slot, int32_t index, gnnd_array* out);
/* API 1.8: array `index` of `slot` as a DLPack tensor (dlpack.h 0.6's DLManagedTensor, what a "dltensor"
 * capsule of torch or numpy holds), of `ndim` dimensions `shape` and `strides` (in elements; NULL: compact)
 * from the array's start; shape NULL: the array at the slot's capacity. `as_bits` nonzero describes bfloat16
 * and float8 elements as unsigned integers of their width (for numpy, which has neither); float8 always is.
 * The tensor keeps the session's slots mapped until its deleter runs (a plain C function: safe on any
 * thread, also while the process exits), so a view kept past gnnd_close_session stays readable: the batch
 * last given out in its slot, unchanged. A GPU session is ended at gnnd only once its last tensor is gone. */
GNND_API gnnd_status gnnd_slot_array_dlpack(const gnnd_session* session, int32_t slot, int32_t index, int32_t ndim,
                                            const int64_t* shape, const int64_t* strides, int32_t as_bits,
                                            void** managed_tensor);
/* One call per batch, as gnnd_next_batch_counts, with every count of the batch. */
GNND_API gnnd_status gnnd_next_batch_values(gnnd_session* session, int32_t release_slot, void* cuda_stream,
                                            gnnd_batch_values* out);
/* After GNND_END_OF_EPOCH (and every batch released): start another epoch. */
GNND_API gnnd_status gnnd_start_epoch(gnnd_session* session, uint64_t epoch);
/* API 1.9: a node session's batch last given out in `slot`: each seed's position in the split or seed_ids it
 * came from (PyG's input_id), written to out[0..capacity). Returns how many there are (the batch's seeds;
 * 0 for a link session, whose input_id is a slot array), or -1 with gnnd_last_error() set. */
GNND_API int64_t gnnd_batch_input_id(const gnnd_session* session, int32_t slot, int64_t* out, int64_t capacity);
/* Ends the session and frees the handle: unmaps the slots (for a GPU session after the work this process
 * queued, which may read them, is done), then waits (10 s at most) until gnnd has freed the session, so
 * that its share of gnnd's session limits is back on return. Tensors of gnnd_slot_array_dlpack keep the
 * slots mapped: a GPU session with some still alive ends at gnnd when the last is deleted, not here. */
GNND_API void gnnd_close_session(gnnd_session* session);

/* The calling thread's last error message ("" if none). */
GNND_API const char* gnnd_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* GNND_CLIENT_H_ */
