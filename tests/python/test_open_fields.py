"""open_fields (more of the open request, in protobuf text format) as exact as the loader's own arguments: a field
it names replaces the loader's, its default value too; what gnnd could not read (a string that is not UTF-8, a
NUL) and what the loader must know itself (batch_size) are refused naming them; the documented 8 M seeds with
times reach gnnd; a CPU session's producer is the host ("host", "auto" or none). Run by ctest."""
import numpy as np
import pytest

import gnnd
from daemon_util import Daemon, generate


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("fields")
    data = generate(root / "g", "--preset", "products", "--scale", "0.001", "--hot-order=false")
    daemon = Daemon(root, f"--dataset=g={data}")
    yield daemon
    assert daemon.stop() == 0, daemon.output()


def seeds_of_first_batch(daemon, **options):
    loader = gnnd.Loader(address=daemon.address, dataset="g", fanouts=[2], output="numpy", copy=True, **options)
    try:
        batch = next(iter(loader))
        return batch.node_ids[:batch.nodes_per_hop[0]].tolist()
    finally:
        loader.close()


def test_a_field_named_with_its_default_value_replaces_the_loaders(served):
    in_order = seeds_of_first_batch(served, batch_size=8, shuffle=False)
    assert seeds_of_first_batch(served, batch_size=8, shuffle=False, open_fields="no_shuffle: false") != in_order
    assert seeds_of_first_batch(served, batch_size=8, shuffle=False, open_fields="no_shuffle: true") == in_order
    # seed_ids through open_fields: the split the loader sends by default is cleared by `split: ""`
    given = seeds_of_first_batch(served, batch_size=3, shuffle=False, open_fields='split: "" seed_ids: [5, 6, 7]')
    assert given == [5, 6, 7]


@pytest.mark.parametrize("fields,message", [
    ('split: "\\377"', "options.open_fields: a string is not valid UTF-8"),
    ("batch_size: 64", "open_fields: batch_size is the loader's own argument"),
    ("seed: 1\0batch_size: 64", "open_fields: OpenSession fields in protobuf text format, a str without NUL"),
])
def test_what_gnnd_could_not_read_is_refused_naming_it(served, fields, message):
    with pytest.raises((gnnd.GnndError, ValueError)) as error:
        gnnd.Loader(address=served.address, dataset="g", fanouts=[2], batch_size=8, open_fields=fields)
    assert message in str(error.value), str(error.value)


def test_uint64_seed_times_past_int64_are_refused(served):
    with pytest.raises(ValueError, match="seed_times: 9223372036854775808 is past int64"):
        gnnd.Loader(address=served.address, dataset="g", fanouts=[2], batch_size=2, seed_ids=np.arange(2),
                    time_attr="node_time", seed_times=np.array([1, 2**63], np.uint64))


def test_the_documented_cap_of_seed_ids_with_times_is_served(tmp_path):
    """8 M seed ids and as many times (varints of up to 10 bytes each: past gRPC's default 64 MiB message) open."""
    data = generate(tmp_path / "t", "--preset", "products", "--scale", "0.001", "--hot-order=false", "--temporal")
    daemon = Daemon(tmp_path, f"--dataset=t={data}")
    n = 8 << 20
    times = np.random.default_rng(0).integers(-2**62, 2**62, n)  # negative: 10 bytes each on the wire
    try:
        loader = gnnd.Loader(address=daemon.address, dataset="t", batch_size=4096, fanouts=[2], output="numpy",
                             seed_ids=np.arange(n) % 1000, seed_times=times, time_attr="node_time")
        assert len(loader) == n // 4096
        batch = next(iter(loader))
        assert batch.nodes_per_hop[0] == 4096
        loader.close()
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_options_by_field_and_by_request_text_open_the_same_sessions(served):
    """An API 1.12 caller's options (each field of the C struct, as older clients send them) and API 1.13's request
    text with the seed arrays beside it (the loaders') open the same sessions: the same steps per epoch, the same
    refusals."""
    import ctypes
    from gnnd import _native
    native = _native.bound()
    lib = native.lib
    client = ctypes.c_void_p()
    _native.check(lib.gnnd_connect(served.address.encode(), 5000, ctypes.byref(client)))
    seeds = np.arange(0, 50, dtype=np.int64)
    fanouts = (ctypes.c_int32 * 2)(3, 2)

    def steps(options):
        session = ctypes.c_void_p()
        status = lib.gnnd_open_session(client, ctypes.byref(options), ctypes.byref(session))
        if status != _native.GNND_OK:
            return lib.gnnd_last_error().decode()
        n = lib.gnnd_session_steps(session)
        lib.gnnd_close_session(session)
        return n

    cases = [
        (dict(batch_size=16), 'batch_size: 16 split: "train"'),
        (dict(batch_size=7, world_size=3, rank=1, drop_last=1), 'batch_size: 7 world_size: 3 rank: 1 drop_last: true split: "train"'),
        (dict(batch_size=8, split=b"valid"), 'batch_size: 8 split: "valid"'),
        (dict(batch_size=8, split=b"nope"), 'batch_size: 8 split: "nope"'),
        (dict(batch_size=8, seed_ids=seeds.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), num_seed_ids=len(seeds)),
         'batch_size: 8 split: ""'),
    ]
    try:
        for by_field, text in cases:
            old = _native.SessionOptions(**{"dataset": b"g", "fanouts": fanouts, "num_fanouts": 2, "world_size": 1,
                                            **by_field})
            new = _native.SessionOptions(request=f'dataset: "g" fanouts: [3, 2] {text}'.encode())
            for array in ("seed_ids", "num_seed_ids"):
                if array in by_field:
                    setattr(new, array, by_field[array])
            got = steps(old)
            assert got == steps(new), (by_field, text)
            if "nope" in text:
                assert "nope" in got, got
            else:
                assert isinstance(got, int) and got > 0, (by_field, got)
    finally:
        lib.gnnd_client_free(client)


def test_producer_on_a_cpu_session_is_the_host_and_other_names_are_refused(served):
    """producer (where a CUDA session's batches are made): a CPU session's are the host's, so "host", "auto" and
    None open the same session; a GPU-only producer or an unknown name is refused naming the choices."""
    made = [seeds_of_first_batch(served, batch_size=8, seed=3, producer=p) for p in (None, "host", "auto")]
    assert made[0] == made[1] == made[2]
    with gnnd.Loader(address=served.address, dataset="g", fanouts=[2], batch_size=8, producer="auto") as loader:
        next(iter(loader))
        lines = [line for line in served.gnnctl("stats").stdout.splitlines() if line.startswith("session ")]
        assert len(lines) == 1 and "\tcpu (made by host)\t" in lines[0] and "\tauto " not in lines[0], lines
    for producer, message in [("sm", "open.producer = 'sm' (a CPU session's batches are made on the host: host, auto "
                                     "or empty)"),
                              ("gpu", "open.producer = 'gpu' (sm, host_gather, host or auto)")]:
        with pytest.raises(gnnd.GnndError) as error:
            gnnd.Loader(address=served.address, dataset="g", fanouts=[2], batch_size=8, producer=producer)
        assert message in str(error.value), str(error.value)
