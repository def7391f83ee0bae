"""``fenced.txn_request`` (encoded from ``fastwire`` layouts) against the generated classes: the
same bytes as ``rpc.TxnRequest`` built from ``cmp_mod_revision`` / ``op_put`` / ``op_delete`` and
the fence's compares and reads, for any keys, values and revisions."""

from __future__ import annotations

from aetcd import rpc
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.etcd.client import cmp_mod_revision, op_delete, op_get, op_put
from leasehold.etcd.fenced import Fence, Write, txn_request

KEYS = st.binary(min_size=1, max_size=300)
REVISIONS = st.integers(min_value=0, max_value=2**63 - 1)
WRITES = st.builds(
    Write, KEYS, st.one_of(st.none(), st.binary(max_size=300)), st.one_of(st.none(), REVISIONS)
)
FENCES = st.one_of(
    st.just(Fence()),
    st.builds(Fence.controller, KEYS, REVISIONS, KEYS, REVISIONS),
)


def _generated(fence: Fence, writes: list[Write]) -> bytes:
    compares = list(fence.compares)
    compares += [cmp_mod_revision(w.key, "=", w.expected) for w in writes if w.expected is not None]
    ops = [op_delete(w.key) if w.value is None else op_put(w.key, w.value) for w in writes]
    reads = [op_get(k) for k in fence.keys]
    return rpc.TxnRequest(compare=compares, success=ops, failure=reads).SerializeToString()


@settings(max_examples=300)
@given(FENCES, st.lists(WRITES, max_size=10))
def test_a_transaction_encodes_as_the_generated_classes_do(fence, writes) -> None:
    assert txn_request(fence, writes) == _generated(fence, writes)


def test_a_creation_compares_mod_revision_zero_explicitly() -> None:
    """``expected`` 0 (the key must not exist) is a oneof member set to 0: on the wire."""
    request = rpc.TxnRequest.FromString(txn_request(Fence(), [Write(b"k", b"v", 0)]))
    assert request.compare[0].WhichOneof("target_union") == "mod_revision"
    assert request.compare[0].mod_revision == 0
    assert request.success[0].request_put.value == b"v"
