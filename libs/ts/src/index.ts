// Leasehold's gRPC API for @grpc/grpc-js: the generated code of src/gen/ (make clients), one
// namespace per proto package. Failed calls carry google.rpc.Status details in the
// grpc-status-details-bin trailer (protos/README.md); `status` and `errorDetails` decode them.
export * as admin from "./gen/leasehold/admin/v1/admin";
export * as broker from "./gen/leasehold/broker/v1/broker";
export * as common from "./gen/leasehold/common/v1/common";
export * as group from "./gen/leasehold/group/v1/group";
export * as health from "./gen/grpc/health/v1/health";
export * as reflectionV1 from "./gen/grpc/reflection/v1/reflection";
export * as reflectionV1alpha from "./gen/grpc/reflection/v1alpha/reflection";
export * as status from "./gen/google/rpc/status";
export * as errorDetails from "./gen/google/rpc/error_details";
