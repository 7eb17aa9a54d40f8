/* gnnd_client: the C ABI of gnnd's trainer client (what the Python package calls through ctypes).
 *
 * Opaque handles, one status enum (gRPC's codes plus GNND_END_OF_EPOCH), and gnnd_last_error() for the
 * message of the calling thread's last failure. A batch's arrays point into gnnd's shared-memory slots:
 * they stay valid until the batch is released. */
#ifndef GNND_CLIENT_H_
#define GNND_CLIENT_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GNND_API __attribute__((visibility("default")))
#else
#define GNND_API
#endif

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
  GNND_BFLOAT16 = 4
} gnnd_dtype;

/* DLPack's device codes. */
typedef enum gnnd_device_type { GNND_DEVICE_CPU = 1, GNND_DEVICE_CUDA = 2 } gnnd_device_type;

typedef struct gnnd_array {
  const char* name; /* "node_ids", "num_nodes_per_hop", "edge_src", "edge_dst", "num_edges_per_hop",
                       "features", "labels" */
  void* data;
  int32_t dtype;    /* gnnd_dtype */
  int32_t ndim;     /* 1 or 2 */
  int64_t shape[2];
  int32_t device_type; /* gnnd_device_type */
  int32_t device_id;
} gnnd_array;

#define GNND_BATCH_ARRAYS 7

typedef struct gnnd_batch {
  int32_t slot; /* pass to gnnd_release_batch */
  uint64_t epoch;
  int64_t step;
  gnnd_array arrays[GNND_BATCH_ARRAYS]; /* in the order of the names above */
} gnnd_batch;

typedef struct gnnd_session_options {
  const char* dataset;
  const char* split; /* "train", "valid" or "test" */
  int64_t batch_size;
  const int32_t* fanouts; /* one per hop; -1 takes every in-neighbor */
  int32_t num_fanouts;
  uint64_t seed;
  uint64_t epoch; /* the first epoch */
  int32_t rank;
  int32_t world_size;
  int32_t shuffle;   /* nonzero: a new permutation every epoch */
  int32_t drop_last; /* nonzero: drop the incomplete last batch */
  int32_t num_slots; /* 0: gnnd's default */
  const char* device; /* "cpu" (or NULL), or "cuda:N" */
} gnnd_session_options;

typedef struct gnnd_client gnnd_client;
typedef struct gnnd_session gnnd_session;

/* address: "unix:/path/to/gnnd.sock" or "host:port"; waits up to timeout_ms for gnnd to answer. */
GNND_API gnnd_status gnnd_connect(const char* address, int32_t timeout_ms, gnnd_client** out);
GNND_API void gnnd_client_free(gnnd_client* client);

GNND_API gnnd_status gnnd_open_session(gnnd_client* client, const gnnd_session_options* options, gnnd_session** out);
/* Batches per epoch for this rank (-1 for a null session). */
GNND_API int64_t gnnd_session_steps(const gnnd_session* session);
/* Blocks until the next batch is ready; GNND_END_OF_EPOCH after the epoch's last one. */
GNND_API gnnd_status gnnd_next_batch(gnnd_session* session, gnnd_batch* out);
GNND_API gnnd_status gnnd_release_batch(gnnd_session* session, int32_t slot);
/* GPU sessions (device "cuda:N"): the arrays are in GPU memory. `cuda_stream` (a cudaStream_t, NULL for the
 * default stream) is made to wait for the batch's completion, without blocking the host; releasing records
 * the slot's "consumed" event on the stream, so gnnd overwrites it only after the work queued there. */
GNND_API gnnd_status gnnd_next_batch_on_stream(gnnd_session* session, void* cuda_stream, gnnd_batch* out);
GNND_API gnnd_status gnnd_release_batch_on_stream(gnnd_session* session, int32_t slot, void* cuda_stream);
/* After GNND_END_OF_EPOCH (and every batch released): start another epoch. */
GNND_API gnnd_status gnnd_start_epoch(gnnd_session* session, uint64_t epoch);
/* Ends the session and frees the handle. */
GNND_API void gnnd_close_session(gnnd_session* session);

/* The calling thread's last error message ("" if none). */
GNND_API const char* gnnd_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* GNND_CLIENT_H_ */
