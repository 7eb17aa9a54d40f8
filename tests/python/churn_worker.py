"""One trainer of the churn test (test_churn.py): opens and closes sessions as fast as it can for SECONDS,
each ended a different way (closed at once after opening, after one batch, mid-epoch with a batch held,
after a whole epoch). Prints `opened N` at the end; exits 1 on any error, naming it (a refusal for sessions
this process closed included)."""
import random
import sys
import time

import gnnd

address, dataset, seconds, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
opened = 0
deadline = time.time() + seconds
while time.time() < deadline:
    try:
        loader = gnnd.Loader(address=address, dataset=dataset, batch_size=64, fanouts=[5, 5], output="numpy",
                             seed=rng.randrange(1 << 30))
        opened += 1
        batches = iter(loader)
        way = rng.randrange(4)
        if way >= 1:
            next(batches)
        if way == 2:
            next(batches)  # holds this one as it closes
        if way == 3:
            assert sum(1 for _ in batches) == len(loader) - 1
        loader.close()
    except gnnd.GnndError as error:
        print(f"session {opened}: {error.code}: {error.message}", flush=True)
        sys.exit(1)
print(f"opened {opened}", flush=True)
