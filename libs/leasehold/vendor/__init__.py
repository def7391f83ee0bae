"""Code generated from third_party/protos for protocols no installed package ships (make proto)."""
