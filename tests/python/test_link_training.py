"""Link prediction learns what it should on gnnd's link batches (CPU backend, Debian's torch, no PyG needed): a
GraphSAGE encoder with a dot-product decoder trained through gnnd.pyg.LinkNeighborLoader on a graph with planted
communities reaches the test AUC and MRR of the same model and pairs trained on an in-process reference sampler,
clearly above chance; and the leakage that seed-edge exclusion removes is measured: without it the training
pairs' own edges are in their neighborhoods, so the model scores training pairs better than it can score test
pairs (whose edges the graph lacks); with exclude="reverse" that gap shrinks. Also examples/link_sage.py runs."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from gnnd.pyg import LinkNeighborLoader  # noqa: E402
from daemon_util import GNNCTL, Daemon  # noqa: E402
from training import SAGE, ReferenceLinkSampler, link_metrics, planted_link_graph, train_links  # noqa: E402

NAME = f"linktrain{os.getpid()}"  # shared-memory names are host-wide
FANOUTS, BATCH, EPOCHS, HIDDEN = [5, 5], 256, 4, 32
EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "link_sage.py"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("link_training")
    graph, splits, features = planted_link_graph(root, seed=3)
    subprocess.run([GNNCTL, "import", "--format=edgelist", root / "graph.npy", root / "data",
                    f"--edge-splits={root / 'splits'}", f"--features={root / 'features.npy'}"], check=True,
                   capture_output=True)
    daemon = Daemon(root, f"--dataset={NAME}={root / 'data'}", name="linktrain")
    yield daemon, root, graph, splits, features
    assert daemon.stop() == 0, daemon.output()


def trained_on_gnnd(daemon, features, exclude):
    torch.manual_seed(0)
    model = SAGE(features.shape[1], HIDDEN, HIDDEN, len(FANOUTS))
    with LinkNeighborLoader(None, num_neighbors=FANOUTS, edge_label_index="train", neg_sampling="binary",
                            batch_size=BATCH, shuffle=True, dataset=NAME, address=daemon.address, seed=5,
                            exclude=exclude) as batches:
        def epoch(e):
            batches.set_epoch(e)
            return batches
        train_auc = train_links(model, epoch, EPOCHS)
    return model, train_auc


def test_gnnd_trains_links_as_well_as_a_reference_sampler_and_exclusion_removes_leakage(served, tmp_path):
    daemon, _, graph, splits, features = served
    figures = {}
    models = {}
    for exclude in (None, "reverse"):
        models[exclude], train_auc = trained_on_gnnd(daemon, features, exclude)
        test_auc, mrr = link_metrics(models[exclude], graph, features, splits["test"])
        figures[f"gnnd, exclude={exclude}"] = dict(train_auc=train_auc, test_auc=test_auc, test_mrr=mrr)

    torch.manual_seed(0)
    reference = SAGE(features.shape[1], HIDDEN, HIDDEN, len(FANOUTS))
    sampler = ReferenceLinkSampler(graph, features, splits["train"], FANOUTS, BATCH, seed=5)
    train_auc = train_links(reference, lambda e: sampler, EPOCHS)
    test_auc, mrr = link_metrics(reference, graph, features, splits["test"])
    figures["reference sampler (no exclusion)"] = dict(train_auc=train_auc, test_auc=test_auc, test_mrr=mrr)
    print(json.dumps(figures, indent=1))

    plain, excluded, ref = (figures[k] for k in ("gnnd, exclude=None", "gnnd, exclude=reverse",
                                                 "reference sampler (no exclusion)"))
    # The same model and pairs, fed by gnnd without exclusion or by the reference sampler: the same quality.
    assert abs(plain["test_auc"] - ref["test_auc"]) <= 0.02, figures
    assert abs(plain["test_mrr"] - ref["test_mrr"]) <= 0.05, figures
    assert plain["test_auc"] >= 0.8 and excluded["test_auc"] >= 0.8, figures  # chance is 0.5
    # Leakage: how much better the model scores the pairs it trained on, with their neighborhoods as sampled,
    # than test pairs. Exclusion takes each training pair's own edge out of its neighborhood.
    leak_plain = plain["train_auc"] - plain["test_auc"]
    leak_excluded = excluded["train_auc"] - excluded["test_auc"]
    assert leak_excluded < leak_plain, figures


def test_the_link_example_trains(served):
    daemon = served[0]
    run = subprocess.run([sys.executable, EXAMPLE, "--dataset", NAME, "--epochs", "2",
                          "--exclude", "reverse"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "GNND_ADDRESS": daemon.address})
    assert run.returncode == 0, run.stderr
    last = run.stdout.strip().splitlines()[-1]
    assert "valid AUC" in last and float(last.split("valid AUC ")[1].split()[0].rstrip(",")) > 0.7, run.stdout
