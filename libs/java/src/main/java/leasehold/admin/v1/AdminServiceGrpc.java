package leasehold.admin.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * AdminService is the public management API. Errors follow protos/README.md:
 * a call that cannot be carried out as a whole (an empty or duplicated list,
 * an unknown enum value, a topic that does not exist for a read) fails with a
 * gRPC status carrying google.rpc.ErrorInfo (and BadRequest for validation)
 * and changes nothing. CreateTopics, DeleteTopics, CreatePartitions and
 * AlterConfigs answer per item instead: the valid items are carried out, each
 * refused one reports its error_code and error_message, and the call is OK.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class AdminServiceGrpc {

  private AdminServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "leasehold.admin.v1.AdminService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<leasehold.admin.v1.CreateTopicsRequest,
      leasehold.admin.v1.CreateTopicsResponse> getCreateTopicsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CreateTopics",
      requestType = leasehold.admin.v1.CreateTopicsRequest.class,
      responseType = leasehold.admin.v1.CreateTopicsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.admin.v1.CreateTopicsRequest,
      leasehold.admin.v1.CreateTopicsResponse> getCreateTopicsMethod() {
    io.grpc.MethodDescriptor<leasehold.admin.v1.CreateTopicsRequest, leasehold.admin.v1.CreateTopicsResponse> getCreateTopicsMethod;
    if ((getCreateTopicsMethod = AdminServiceGrpc.getCreateTopicsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getCreateTopicsMethod = AdminServiceGrpc.getCreateTopicsMethod) == null) {
          AdminServiceGrpc.getCreateTopicsMethod = getCreateTopicsMethod =
              io.grpc.MethodDescriptor.<leasehold.admin.v1.CreateTopicsRequest, leasehold.admin.v1.CreateTopicsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CreateTopics"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.CreateTopicsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.CreateTopicsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("CreateTopics"))
              .build();
        }
      }
    }
    return getCreateTopicsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.admin.v1.DeleteTopicsRequest,
      leasehold.admin.v1.DeleteTopicsResponse> getDeleteTopicsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DeleteTopics",
      requestType = leasehold.admin.v1.DeleteTopicsRequest.class,
      responseType = leasehold.admin.v1.DeleteTopicsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.admin.v1.DeleteTopicsRequest,
      leasehold.admin.v1.DeleteTopicsResponse> getDeleteTopicsMethod() {
    io.grpc.MethodDescriptor<leasehold.admin.v1.DeleteTopicsRequest, leasehold.admin.v1.DeleteTopicsResponse> getDeleteTopicsMethod;
    if ((getDeleteTopicsMethod = AdminServiceGrpc.getDeleteTopicsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getDeleteTopicsMethod = AdminServiceGrpc.getDeleteTopicsMethod) == null) {
          AdminServiceGrpc.getDeleteTopicsMethod = getDeleteTopicsMethod =
              io.grpc.MethodDescriptor.<leasehold.admin.v1.DeleteTopicsRequest, leasehold.admin.v1.DeleteTopicsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DeleteTopics"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.DeleteTopicsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.DeleteTopicsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("DeleteTopics"))
              .build();
        }
      }
    }
    return getDeleteTopicsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.admin.v1.CreatePartitionsRequest,
      leasehold.admin.v1.CreatePartitionsResponse> getCreatePartitionsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CreatePartitions",
      requestType = leasehold.admin.v1.CreatePartitionsRequest.class,
      responseType = leasehold.admin.v1.CreatePartitionsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.admin.v1.CreatePartitionsRequest,
      leasehold.admin.v1.CreatePartitionsResponse> getCreatePartitionsMethod() {
    io.grpc.MethodDescriptor<leasehold.admin.v1.CreatePartitionsRequest, leasehold.admin.v1.CreatePartitionsResponse> getCreatePartitionsMethod;
    if ((getCreatePartitionsMethod = AdminServiceGrpc.getCreatePartitionsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getCreatePartitionsMethod = AdminServiceGrpc.getCreatePartitionsMethod) == null) {
          AdminServiceGrpc.getCreatePartitionsMethod = getCreatePartitionsMethod =
              io.grpc.MethodDescriptor.<leasehold.admin.v1.CreatePartitionsRequest, leasehold.admin.v1.CreatePartitionsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CreatePartitions"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.CreatePartitionsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.CreatePartitionsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("CreatePartitions"))
              .build();
        }
      }
    }
    return getCreatePartitionsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.admin.v1.ListTopicsRequest,
      leasehold.admin.v1.ListTopicsResponse> getListTopicsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListTopics",
      requestType = leasehold.admin.v1.ListTopicsRequest.class,
      responseType = leasehold.admin.v1.ListTopicsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.admin.v1.ListTopicsRequest,
      leasehold.admin.v1.ListTopicsResponse> getListTopicsMethod() {
    io.grpc.MethodDescriptor<leasehold.admin.v1.ListTopicsRequest, leasehold.admin.v1.ListTopicsResponse> getListTopicsMethod;
    if ((getListTopicsMethod = AdminServiceGrpc.getListTopicsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getListTopicsMethod = AdminServiceGrpc.getListTopicsMethod) == null) {
          AdminServiceGrpc.getListTopicsMethod = getListTopicsMethod =
              io.grpc.MethodDescriptor.<leasehold.admin.v1.ListTopicsRequest, leasehold.admin.v1.ListTopicsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListTopics"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.ListTopicsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.ListTopicsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("ListTopics"))
              .build();
        }
      }
    }
    return getListTopicsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.admin.v1.DescribeTopicsRequest,
      leasehold.admin.v1.DescribeTopicsResponse> getDescribeTopicsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DescribeTopics",
      requestType = leasehold.admin.v1.DescribeTopicsRequest.class,
      responseType = leasehold.admin.v1.DescribeTopicsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.admin.v1.DescribeTopicsRequest,
      leasehold.admin.v1.DescribeTopicsResponse> getDescribeTopicsMethod() {
    io.grpc.MethodDescriptor<leasehold.admin.v1.DescribeTopicsRequest, leasehold.admin.v1.DescribeTopicsResponse> getDescribeTopicsMethod;
    if ((getDescribeTopicsMethod = AdminServiceGrpc.getDescribeTopicsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getDescribeTopicsMethod = AdminServiceGrpc.getDescribeTopicsMethod) == null) {
          AdminServiceGrpc.getDescribeTopicsMethod = getDescribeTopicsMethod =
              io.grpc.MethodDescriptor.<leasehold.admin.v1.DescribeTopicsRequest, leasehold.admin.v1.DescribeTopicsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DescribeTopics"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.DescribeTopicsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.DescribeTopicsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("DescribeTopics"))
              .build();
        }
      }
    }
    return getDescribeTopicsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.admin.v1.DescribeClusterRequest,
      leasehold.admin.v1.DescribeClusterResponse> getDescribeClusterMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DescribeCluster",
      requestType = leasehold.admin.v1.DescribeClusterRequest.class,
      responseType = leasehold.admin.v1.DescribeClusterResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.admin.v1.DescribeClusterRequest,
      leasehold.admin.v1.DescribeClusterResponse> getDescribeClusterMethod() {
    io.grpc.MethodDescriptor<leasehold.admin.v1.DescribeClusterRequest, leasehold.admin.v1.DescribeClusterResponse> getDescribeClusterMethod;
    if ((getDescribeClusterMethod = AdminServiceGrpc.getDescribeClusterMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getDescribeClusterMethod = AdminServiceGrpc.getDescribeClusterMethod) == null) {
          AdminServiceGrpc.getDescribeClusterMethod = getDescribeClusterMethod =
              io.grpc.MethodDescriptor.<leasehold.admin.v1.DescribeClusterRequest, leasehold.admin.v1.DescribeClusterResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DescribeCluster"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.DescribeClusterRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.DescribeClusterResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("DescribeCluster"))
              .build();
        }
      }
    }
    return getDescribeClusterMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.admin.v1.DescribeConfigsRequest,
      leasehold.admin.v1.DescribeConfigsResponse> getDescribeConfigsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DescribeConfigs",
      requestType = leasehold.admin.v1.DescribeConfigsRequest.class,
      responseType = leasehold.admin.v1.DescribeConfigsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.admin.v1.DescribeConfigsRequest,
      leasehold.admin.v1.DescribeConfigsResponse> getDescribeConfigsMethod() {
    io.grpc.MethodDescriptor<leasehold.admin.v1.DescribeConfigsRequest, leasehold.admin.v1.DescribeConfigsResponse> getDescribeConfigsMethod;
    if ((getDescribeConfigsMethod = AdminServiceGrpc.getDescribeConfigsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getDescribeConfigsMethod = AdminServiceGrpc.getDescribeConfigsMethod) == null) {
          AdminServiceGrpc.getDescribeConfigsMethod = getDescribeConfigsMethod =
              io.grpc.MethodDescriptor.<leasehold.admin.v1.DescribeConfigsRequest, leasehold.admin.v1.DescribeConfigsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DescribeConfigs"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.DescribeConfigsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.DescribeConfigsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("DescribeConfigs"))
              .build();
        }
      }
    }
    return getDescribeConfigsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.admin.v1.AlterConfigsRequest,
      leasehold.admin.v1.AlterConfigsResponse> getAlterConfigsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "AlterConfigs",
      requestType = leasehold.admin.v1.AlterConfigsRequest.class,
      responseType = leasehold.admin.v1.AlterConfigsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.admin.v1.AlterConfigsRequest,
      leasehold.admin.v1.AlterConfigsResponse> getAlterConfigsMethod() {
    io.grpc.MethodDescriptor<leasehold.admin.v1.AlterConfigsRequest, leasehold.admin.v1.AlterConfigsResponse> getAlterConfigsMethod;
    if ((getAlterConfigsMethod = AdminServiceGrpc.getAlterConfigsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getAlterConfigsMethod = AdminServiceGrpc.getAlterConfigsMethod) == null) {
          AdminServiceGrpc.getAlterConfigsMethod = getAlterConfigsMethod =
              io.grpc.MethodDescriptor.<leasehold.admin.v1.AlterConfigsRequest, leasehold.admin.v1.AlterConfigsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "AlterConfigs"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.AlterConfigsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.AlterConfigsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("AlterConfigs"))
              .build();
        }
      }
    }
    return getAlterConfigsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.admin.v1.GenerateReassignmentRequest,
      leasehold.admin.v1.GenerateReassignmentResponse> getGenerateReassignmentMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GenerateReassignment",
      requestType = leasehold.admin.v1.GenerateReassignmentRequest.class,
      responseType = leasehold.admin.v1.GenerateReassignmentResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.admin.v1.GenerateReassignmentRequest,
      leasehold.admin.v1.GenerateReassignmentResponse> getGenerateReassignmentMethod() {
    io.grpc.MethodDescriptor<leasehold.admin.v1.GenerateReassignmentRequest, leasehold.admin.v1.GenerateReassignmentResponse> getGenerateReassignmentMethod;
    if ((getGenerateReassignmentMethod = AdminServiceGrpc.getGenerateReassignmentMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getGenerateReassignmentMethod = AdminServiceGrpc.getGenerateReassignmentMethod) == null) {
          AdminServiceGrpc.getGenerateReassignmentMethod = getGenerateReassignmentMethod =
              io.grpc.MethodDescriptor.<leasehold.admin.v1.GenerateReassignmentRequest, leasehold.admin.v1.GenerateReassignmentResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GenerateReassignment"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.GenerateReassignmentRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.GenerateReassignmentResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("GenerateReassignment"))
              .build();
        }
      }
    }
    return getGenerateReassignmentMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.admin.v1.AlterPartitionReassignmentsRequest,
      leasehold.admin.v1.AlterPartitionReassignmentsResponse> getAlterPartitionReassignmentsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "AlterPartitionReassignments",
      requestType = leasehold.admin.v1.AlterPartitionReassignmentsRequest.class,
      responseType = leasehold.admin.v1.AlterPartitionReassignmentsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.admin.v1.AlterPartitionReassignmentsRequest,
      leasehold.admin.v1.AlterPartitionReassignmentsResponse> getAlterPartitionReassignmentsMethod() {
    io.grpc.MethodDescriptor<leasehold.admin.v1.AlterPartitionReassignmentsRequest, leasehold.admin.v1.AlterPartitionReassignmentsResponse> getAlterPartitionReassignmentsMethod;
    if ((getAlterPartitionReassignmentsMethod = AdminServiceGrpc.getAlterPartitionReassignmentsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getAlterPartitionReassignmentsMethod = AdminServiceGrpc.getAlterPartitionReassignmentsMethod) == null) {
          AdminServiceGrpc.getAlterPartitionReassignmentsMethod = getAlterPartitionReassignmentsMethod =
              io.grpc.MethodDescriptor.<leasehold.admin.v1.AlterPartitionReassignmentsRequest, leasehold.admin.v1.AlterPartitionReassignmentsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "AlterPartitionReassignments"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.AlterPartitionReassignmentsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.AlterPartitionReassignmentsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("AlterPartitionReassignments"))
              .build();
        }
      }
    }
    return getAlterPartitionReassignmentsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.admin.v1.ListPartitionReassignmentsRequest,
      leasehold.admin.v1.ListPartitionReassignmentsResponse> getListPartitionReassignmentsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListPartitionReassignments",
      requestType = leasehold.admin.v1.ListPartitionReassignmentsRequest.class,
      responseType = leasehold.admin.v1.ListPartitionReassignmentsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.admin.v1.ListPartitionReassignmentsRequest,
      leasehold.admin.v1.ListPartitionReassignmentsResponse> getListPartitionReassignmentsMethod() {
    io.grpc.MethodDescriptor<leasehold.admin.v1.ListPartitionReassignmentsRequest, leasehold.admin.v1.ListPartitionReassignmentsResponse> getListPartitionReassignmentsMethod;
    if ((getListPartitionReassignmentsMethod = AdminServiceGrpc.getListPartitionReassignmentsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getListPartitionReassignmentsMethod = AdminServiceGrpc.getListPartitionReassignmentsMethod) == null) {
          AdminServiceGrpc.getListPartitionReassignmentsMethod = getListPartitionReassignmentsMethod =
              io.grpc.MethodDescriptor.<leasehold.admin.v1.ListPartitionReassignmentsRequest, leasehold.admin.v1.ListPartitionReassignmentsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListPartitionReassignments"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.ListPartitionReassignmentsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.ListPartitionReassignmentsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("ListPartitionReassignments"))
              .build();
        }
      }
    }
    return getListPartitionReassignmentsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.admin.v1.ElectLeadersRequest,
      leasehold.admin.v1.ElectLeadersResponse> getElectLeadersMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ElectLeaders",
      requestType = leasehold.admin.v1.ElectLeadersRequest.class,
      responseType = leasehold.admin.v1.ElectLeadersResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.admin.v1.ElectLeadersRequest,
      leasehold.admin.v1.ElectLeadersResponse> getElectLeadersMethod() {
    io.grpc.MethodDescriptor<leasehold.admin.v1.ElectLeadersRequest, leasehold.admin.v1.ElectLeadersResponse> getElectLeadersMethod;
    if ((getElectLeadersMethod = AdminServiceGrpc.getElectLeadersMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getElectLeadersMethod = AdminServiceGrpc.getElectLeadersMethod) == null) {
          AdminServiceGrpc.getElectLeadersMethod = getElectLeadersMethod =
              io.grpc.MethodDescriptor.<leasehold.admin.v1.ElectLeadersRequest, leasehold.admin.v1.ElectLeadersResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ElectLeaders"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.ElectLeadersRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.ElectLeadersResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("ElectLeaders"))
              .build();
        }
      }
    }
    return getElectLeadersMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.admin.v1.GetOperationRequest,
      leasehold.admin.v1.GetOperationResponse> getGetOperationMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetOperation",
      requestType = leasehold.admin.v1.GetOperationRequest.class,
      responseType = leasehold.admin.v1.GetOperationResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.admin.v1.GetOperationRequest,
      leasehold.admin.v1.GetOperationResponse> getGetOperationMethod() {
    io.grpc.MethodDescriptor<leasehold.admin.v1.GetOperationRequest, leasehold.admin.v1.GetOperationResponse> getGetOperationMethod;
    if ((getGetOperationMethod = AdminServiceGrpc.getGetOperationMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getGetOperationMethod = AdminServiceGrpc.getGetOperationMethod) == null) {
          AdminServiceGrpc.getGetOperationMethod = getGetOperationMethod =
              io.grpc.MethodDescriptor.<leasehold.admin.v1.GetOperationRequest, leasehold.admin.v1.GetOperationResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetOperation"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.GetOperationRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.admin.v1.GetOperationResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("GetOperation"))
              .build();
        }
      }
    }
    return getGetOperationMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static AdminServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AdminServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AdminServiceStub>() {
        @java.lang.Override
        public AdminServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AdminServiceStub(channel, callOptions);
        }
      };
    return AdminServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static AdminServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AdminServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AdminServiceBlockingV2Stub>() {
        @java.lang.Override
        public AdminServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AdminServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return AdminServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static AdminServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AdminServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AdminServiceBlockingStub>() {
        @java.lang.Override
        public AdminServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AdminServiceBlockingStub(channel, callOptions);
        }
      };
    return AdminServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static AdminServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AdminServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AdminServiceFutureStub>() {
        @java.lang.Override
        public AdminServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AdminServiceFutureStub(channel, callOptions);
        }
      };
    return AdminServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * AdminService is the public management API. Errors follow protos/README.md:
   * a call that cannot be carried out as a whole (an empty or duplicated list,
   * an unknown enum value, a topic that does not exist for a read) fails with a
   * gRPC status carrying google.rpc.ErrorInfo (and BadRequest for validation)
   * and changes nothing. CreateTopics, DeleteTopics, CreatePartitions and
   * AlterConfigs answer per item instead: the valid items are carried out, each
   * refused one reports its error_code and error_message, and the call is OK.
   * </pre>
   */
  public interface AsyncService {

    /**
     */
    default void createTopics(leasehold.admin.v1.CreateTopicsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.CreateTopicsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCreateTopicsMethod(), responseObserver);
    }

    /**
     */
    default void deleteTopics(leasehold.admin.v1.DeleteTopicsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.DeleteTopicsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDeleteTopicsMethod(), responseObserver);
    }

    /**
     */
    default void createPartitions(leasehold.admin.v1.CreatePartitionsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.CreatePartitionsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCreatePartitionsMethod(), responseObserver);
    }

    /**
     */
    default void listTopics(leasehold.admin.v1.ListTopicsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.ListTopicsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListTopicsMethod(), responseObserver);
    }

    /**
     */
    default void describeTopics(leasehold.admin.v1.DescribeTopicsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.DescribeTopicsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDescribeTopicsMethod(), responseObserver);
    }

    /**
     */
    default void describeCluster(leasehold.admin.v1.DescribeClusterRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.DescribeClusterResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDescribeClusterMethod(), responseObserver);
    }

    /**
     */
    default void describeConfigs(leasehold.admin.v1.DescribeConfigsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.DescribeConfigsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDescribeConfigsMethod(), responseObserver);
    }

    /**
     */
    default void alterConfigs(leasehold.admin.v1.AlterConfigsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.AlterConfigsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getAlterConfigsMethod(), responseObserver);
    }

    /**
     */
    default void generateReassignment(leasehold.admin.v1.GenerateReassignmentRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.GenerateReassignmentResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGenerateReassignmentMethod(), responseObserver);
    }

    /**
     */
    default void alterPartitionReassignments(leasehold.admin.v1.AlterPartitionReassignmentsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.AlterPartitionReassignmentsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getAlterPartitionReassignmentsMethod(), responseObserver);
    }

    /**
     */
    default void listPartitionReassignments(leasehold.admin.v1.ListPartitionReassignmentsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.ListPartitionReassignmentsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListPartitionReassignmentsMethod(), responseObserver);
    }

    /**
     */
    default void electLeaders(leasehold.admin.v1.ElectLeadersRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.ElectLeadersResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getElectLeadersMethod(), responseObserver);
    }

    /**
     * <pre>
     * GetOperation reports the outcome of an intent the controller carries out
     * (deletion, reassignment, election) by its request id.
     * </pre>
     */
    default void getOperation(leasehold.admin.v1.GetOperationRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.GetOperationResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetOperationMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service AdminService.
   * <pre>
   * AdminService is the public management API. Errors follow protos/README.md:
   * a call that cannot be carried out as a whole (an empty or duplicated list,
   * an unknown enum value, a topic that does not exist for a read) fails with a
   * gRPC status carrying google.rpc.ErrorInfo (and BadRequest for validation)
   * and changes nothing. CreateTopics, DeleteTopics, CreatePartitions and
   * AlterConfigs answer per item instead: the valid items are carried out, each
   * refused one reports its error_code and error_message, and the call is OK.
   * </pre>
   */
  public static abstract class AdminServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return AdminServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service AdminService.
   * <pre>
   * AdminService is the public management API. Errors follow protos/README.md:
   * a call that cannot be carried out as a whole (an empty or duplicated list,
   * an unknown enum value, a topic that does not exist for a read) fails with a
   * gRPC status carrying google.rpc.ErrorInfo (and BadRequest for validation)
   * and changes nothing. CreateTopics, DeleteTopics, CreatePartitions and
   * AlterConfigs answer per item instead: the valid items are carried out, each
   * refused one reports its error_code and error_message, and the call is OK.
   * </pre>
   */
  public static final class AdminServiceStub
      extends io.grpc.stub.AbstractAsyncStub<AdminServiceStub> {
    private AdminServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AdminServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AdminServiceStub(channel, callOptions);
    }

    /**
     */
    public void createTopics(leasehold.admin.v1.CreateTopicsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.CreateTopicsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCreateTopicsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void deleteTopics(leasehold.admin.v1.DeleteTopicsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.DeleteTopicsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDeleteTopicsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void createPartitions(leasehold.admin.v1.CreatePartitionsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.CreatePartitionsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCreatePartitionsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void listTopics(leasehold.admin.v1.ListTopicsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.ListTopicsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListTopicsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void describeTopics(leasehold.admin.v1.DescribeTopicsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.DescribeTopicsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDescribeTopicsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void describeCluster(leasehold.admin.v1.DescribeClusterRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.DescribeClusterResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDescribeClusterMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void describeConfigs(leasehold.admin.v1.DescribeConfigsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.DescribeConfigsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDescribeConfigsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void alterConfigs(leasehold.admin.v1.AlterConfigsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.AlterConfigsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getAlterConfigsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void generateReassignment(leasehold.admin.v1.GenerateReassignmentRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.GenerateReassignmentResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGenerateReassignmentMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void alterPartitionReassignments(leasehold.admin.v1.AlterPartitionReassignmentsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.AlterPartitionReassignmentsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getAlterPartitionReassignmentsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void listPartitionReassignments(leasehold.admin.v1.ListPartitionReassignmentsRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.ListPartitionReassignmentsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListPartitionReassignmentsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void electLeaders(leasehold.admin.v1.ElectLeadersRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.ElectLeadersResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getElectLeadersMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * GetOperation reports the outcome of an intent the controller carries out
     * (deletion, reassignment, election) by its request id.
     * </pre>
     */
    public void getOperation(leasehold.admin.v1.GetOperationRequest request,
        io.grpc.stub.StreamObserver<leasehold.admin.v1.GetOperationResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetOperationMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service AdminService.
   * <pre>
   * AdminService is the public management API. Errors follow protos/README.md:
   * a call that cannot be carried out as a whole (an empty or duplicated list,
   * an unknown enum value, a topic that does not exist for a read) fails with a
   * gRPC status carrying google.rpc.ErrorInfo (and BadRequest for validation)
   * and changes nothing. CreateTopics, DeleteTopics, CreatePartitions and
   * AlterConfigs answer per item instead: the valid items are carried out, each
   * refused one reports its error_code and error_message, and the call is OK.
   * </pre>
   */
  public static final class AdminServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<AdminServiceBlockingV2Stub> {
    private AdminServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AdminServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AdminServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     */
    public leasehold.admin.v1.CreateTopicsResponse createTopics(leasehold.admin.v1.CreateTopicsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCreateTopicsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.DeleteTopicsResponse deleteTopics(leasehold.admin.v1.DeleteTopicsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDeleteTopicsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.CreatePartitionsResponse createPartitions(leasehold.admin.v1.CreatePartitionsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCreatePartitionsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.ListTopicsResponse listTopics(leasehold.admin.v1.ListTopicsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListTopicsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.DescribeTopicsResponse describeTopics(leasehold.admin.v1.DescribeTopicsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDescribeTopicsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.DescribeClusterResponse describeCluster(leasehold.admin.v1.DescribeClusterRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDescribeClusterMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.DescribeConfigsResponse describeConfigs(leasehold.admin.v1.DescribeConfigsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDescribeConfigsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.AlterConfigsResponse alterConfigs(leasehold.admin.v1.AlterConfigsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getAlterConfigsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.GenerateReassignmentResponse generateReassignment(leasehold.admin.v1.GenerateReassignmentRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGenerateReassignmentMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.AlterPartitionReassignmentsResponse alterPartitionReassignments(leasehold.admin.v1.AlterPartitionReassignmentsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getAlterPartitionReassignmentsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.ListPartitionReassignmentsResponse listPartitionReassignments(leasehold.admin.v1.ListPartitionReassignmentsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListPartitionReassignmentsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.ElectLeadersResponse electLeaders(leasehold.admin.v1.ElectLeadersRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getElectLeadersMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetOperation reports the outcome of an intent the controller carries out
     * (deletion, reassignment, election) by its request id.
     * </pre>
     */
    public leasehold.admin.v1.GetOperationResponse getOperation(leasehold.admin.v1.GetOperationRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetOperationMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service AdminService.
   * <pre>
   * AdminService is the public management API. Errors follow protos/README.md:
   * a call that cannot be carried out as a whole (an empty or duplicated list,
   * an unknown enum value, a topic that does not exist for a read) fails with a
   * gRPC status carrying google.rpc.ErrorInfo (and BadRequest for validation)
   * and changes nothing. CreateTopics, DeleteTopics, CreatePartitions and
   * AlterConfigs answer per item instead: the valid items are carried out, each
   * refused one reports its error_code and error_message, and the call is OK.
   * </pre>
   */
  public static final class AdminServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<AdminServiceBlockingStub> {
    private AdminServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AdminServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AdminServiceBlockingStub(channel, callOptions);
    }

    /**
     */
    public leasehold.admin.v1.CreateTopicsResponse createTopics(leasehold.admin.v1.CreateTopicsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCreateTopicsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.DeleteTopicsResponse deleteTopics(leasehold.admin.v1.DeleteTopicsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDeleteTopicsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.CreatePartitionsResponse createPartitions(leasehold.admin.v1.CreatePartitionsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCreatePartitionsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.ListTopicsResponse listTopics(leasehold.admin.v1.ListTopicsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListTopicsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.DescribeTopicsResponse describeTopics(leasehold.admin.v1.DescribeTopicsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDescribeTopicsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.DescribeClusterResponse describeCluster(leasehold.admin.v1.DescribeClusterRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDescribeClusterMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.DescribeConfigsResponse describeConfigs(leasehold.admin.v1.DescribeConfigsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDescribeConfigsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.AlterConfigsResponse alterConfigs(leasehold.admin.v1.AlterConfigsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getAlterConfigsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.GenerateReassignmentResponse generateReassignment(leasehold.admin.v1.GenerateReassignmentRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGenerateReassignmentMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.AlterPartitionReassignmentsResponse alterPartitionReassignments(leasehold.admin.v1.AlterPartitionReassignmentsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getAlterPartitionReassignmentsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.ListPartitionReassignmentsResponse listPartitionReassignments(leasehold.admin.v1.ListPartitionReassignmentsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListPartitionReassignmentsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.admin.v1.ElectLeadersResponse electLeaders(leasehold.admin.v1.ElectLeadersRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getElectLeadersMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetOperation reports the outcome of an intent the controller carries out
     * (deletion, reassignment, election) by its request id.
     * </pre>
     */
    public leasehold.admin.v1.GetOperationResponse getOperation(leasehold.admin.v1.GetOperationRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetOperationMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service AdminService.
   * <pre>
   * AdminService is the public management API. Errors follow protos/README.md:
   * a call that cannot be carried out as a whole (an empty or duplicated list,
   * an unknown enum value, a topic that does not exist for a read) fails with a
   * gRPC status carrying google.rpc.ErrorInfo (and BadRequest for validation)
   * and changes nothing. CreateTopics, DeleteTopics, CreatePartitions and
   * AlterConfigs answer per item instead: the valid items are carried out, each
   * refused one reports its error_code and error_message, and the call is OK.
   * </pre>
   */
  public static final class AdminServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<AdminServiceFutureStub> {
    private AdminServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AdminServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AdminServiceFutureStub(channel, callOptions);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.admin.v1.CreateTopicsResponse> createTopics(
        leasehold.admin.v1.CreateTopicsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCreateTopicsMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.admin.v1.DeleteTopicsResponse> deleteTopics(
        leasehold.admin.v1.DeleteTopicsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDeleteTopicsMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.admin.v1.CreatePartitionsResponse> createPartitions(
        leasehold.admin.v1.CreatePartitionsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCreatePartitionsMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.admin.v1.ListTopicsResponse> listTopics(
        leasehold.admin.v1.ListTopicsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListTopicsMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.admin.v1.DescribeTopicsResponse> describeTopics(
        leasehold.admin.v1.DescribeTopicsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDescribeTopicsMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.admin.v1.DescribeClusterResponse> describeCluster(
        leasehold.admin.v1.DescribeClusterRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDescribeClusterMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.admin.v1.DescribeConfigsResponse> describeConfigs(
        leasehold.admin.v1.DescribeConfigsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDescribeConfigsMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.admin.v1.AlterConfigsResponse> alterConfigs(
        leasehold.admin.v1.AlterConfigsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getAlterConfigsMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.admin.v1.GenerateReassignmentResponse> generateReassignment(
        leasehold.admin.v1.GenerateReassignmentRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGenerateReassignmentMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.admin.v1.AlterPartitionReassignmentsResponse> alterPartitionReassignments(
        leasehold.admin.v1.AlterPartitionReassignmentsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getAlterPartitionReassignmentsMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.admin.v1.ListPartitionReassignmentsResponse> listPartitionReassignments(
        leasehold.admin.v1.ListPartitionReassignmentsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListPartitionReassignmentsMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.admin.v1.ElectLeadersResponse> electLeaders(
        leasehold.admin.v1.ElectLeadersRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getElectLeadersMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * GetOperation reports the outcome of an intent the controller carries out
     * (deletion, reassignment, election) by its request id.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.admin.v1.GetOperationResponse> getOperation(
        leasehold.admin.v1.GetOperationRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetOperationMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_CREATE_TOPICS = 0;
  private static final int METHODID_DELETE_TOPICS = 1;
  private static final int METHODID_CREATE_PARTITIONS = 2;
  private static final int METHODID_LIST_TOPICS = 3;
  private static final int METHODID_DESCRIBE_TOPICS = 4;
  private static final int METHODID_DESCRIBE_CLUSTER = 5;
  private static final int METHODID_DESCRIBE_CONFIGS = 6;
  private static final int METHODID_ALTER_CONFIGS = 7;
  private static final int METHODID_GENERATE_REASSIGNMENT = 8;
  private static final int METHODID_ALTER_PARTITION_REASSIGNMENTS = 9;
  private static final int METHODID_LIST_PARTITION_REASSIGNMENTS = 10;
  private static final int METHODID_ELECT_LEADERS = 11;
  private static final int METHODID_GET_OPERATION = 12;

  private static final class MethodHandlers<Req, Resp> implements
      io.grpc.stub.ServerCalls.UnaryMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ServerStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ClientStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.BidiStreamingMethod<Req, Resp> {
    private final AsyncService serviceImpl;
    private final int methodId;

    MethodHandlers(AsyncService serviceImpl, int methodId) {
      this.serviceImpl = serviceImpl;
      this.methodId = methodId;
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public void invoke(Req request, io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_CREATE_TOPICS:
          serviceImpl.createTopics((leasehold.admin.v1.CreateTopicsRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.admin.v1.CreateTopicsResponse>) responseObserver);
          break;
        case METHODID_DELETE_TOPICS:
          serviceImpl.deleteTopics((leasehold.admin.v1.DeleteTopicsRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.admin.v1.DeleteTopicsResponse>) responseObserver);
          break;
        case METHODID_CREATE_PARTITIONS:
          serviceImpl.createPartitions((leasehold.admin.v1.CreatePartitionsRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.admin.v1.CreatePartitionsResponse>) responseObserver);
          break;
        case METHODID_LIST_TOPICS:
          serviceImpl.listTopics((leasehold.admin.v1.ListTopicsRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.admin.v1.ListTopicsResponse>) responseObserver);
          break;
        case METHODID_DESCRIBE_TOPICS:
          serviceImpl.describeTopics((leasehold.admin.v1.DescribeTopicsRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.admin.v1.DescribeTopicsResponse>) responseObserver);
          break;
        case METHODID_DESCRIBE_CLUSTER:
          serviceImpl.describeCluster((leasehold.admin.v1.DescribeClusterRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.admin.v1.DescribeClusterResponse>) responseObserver);
          break;
        case METHODID_DESCRIBE_CONFIGS:
          serviceImpl.describeConfigs((leasehold.admin.v1.DescribeConfigsRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.admin.v1.DescribeConfigsResponse>) responseObserver);
          break;
        case METHODID_ALTER_CONFIGS:
          serviceImpl.alterConfigs((leasehold.admin.v1.AlterConfigsRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.admin.v1.AlterConfigsResponse>) responseObserver);
          break;
        case METHODID_GENERATE_REASSIGNMENT:
          serviceImpl.generateReassignment((leasehold.admin.v1.GenerateReassignmentRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.admin.v1.GenerateReassignmentResponse>) responseObserver);
          break;
        case METHODID_ALTER_PARTITION_REASSIGNMENTS:
          serviceImpl.alterPartitionReassignments((leasehold.admin.v1.AlterPartitionReassignmentsRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.admin.v1.AlterPartitionReassignmentsResponse>) responseObserver);
          break;
        case METHODID_LIST_PARTITION_REASSIGNMENTS:
          serviceImpl.listPartitionReassignments((leasehold.admin.v1.ListPartitionReassignmentsRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.admin.v1.ListPartitionReassignmentsResponse>) responseObserver);
          break;
        case METHODID_ELECT_LEADERS:
          serviceImpl.electLeaders((leasehold.admin.v1.ElectLeadersRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.admin.v1.ElectLeadersResponse>) responseObserver);
          break;
        case METHODID_GET_OPERATION:
          serviceImpl.getOperation((leasehold.admin.v1.GetOperationRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.admin.v1.GetOperationResponse>) responseObserver);
          break;
        default:
          throw new AssertionError();
      }
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public io.grpc.stub.StreamObserver<Req> invoke(
        io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getCreateTopicsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.admin.v1.CreateTopicsRequest,
              leasehold.admin.v1.CreateTopicsResponse>(
                service, METHODID_CREATE_TOPICS)))
        .addMethod(
          getDeleteTopicsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.admin.v1.DeleteTopicsRequest,
              leasehold.admin.v1.DeleteTopicsResponse>(
                service, METHODID_DELETE_TOPICS)))
        .addMethod(
          getCreatePartitionsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.admin.v1.CreatePartitionsRequest,
              leasehold.admin.v1.CreatePartitionsResponse>(
                service, METHODID_CREATE_PARTITIONS)))
        .addMethod(
          getListTopicsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.admin.v1.ListTopicsRequest,
              leasehold.admin.v1.ListTopicsResponse>(
                service, METHODID_LIST_TOPICS)))
        .addMethod(
          getDescribeTopicsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.admin.v1.DescribeTopicsRequest,
              leasehold.admin.v1.DescribeTopicsResponse>(
                service, METHODID_DESCRIBE_TOPICS)))
        .addMethod(
          getDescribeClusterMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.admin.v1.DescribeClusterRequest,
              leasehold.admin.v1.DescribeClusterResponse>(
                service, METHODID_DESCRIBE_CLUSTER)))
        .addMethod(
          getDescribeConfigsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.admin.v1.DescribeConfigsRequest,
              leasehold.admin.v1.DescribeConfigsResponse>(
                service, METHODID_DESCRIBE_CONFIGS)))
        .addMethod(
          getAlterConfigsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.admin.v1.AlterConfigsRequest,
              leasehold.admin.v1.AlterConfigsResponse>(
                service, METHODID_ALTER_CONFIGS)))
        .addMethod(
          getGenerateReassignmentMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.admin.v1.GenerateReassignmentRequest,
              leasehold.admin.v1.GenerateReassignmentResponse>(
                service, METHODID_GENERATE_REASSIGNMENT)))
        .addMethod(
          getAlterPartitionReassignmentsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.admin.v1.AlterPartitionReassignmentsRequest,
              leasehold.admin.v1.AlterPartitionReassignmentsResponse>(
                service, METHODID_ALTER_PARTITION_REASSIGNMENTS)))
        .addMethod(
          getListPartitionReassignmentsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.admin.v1.ListPartitionReassignmentsRequest,
              leasehold.admin.v1.ListPartitionReassignmentsResponse>(
                service, METHODID_LIST_PARTITION_REASSIGNMENTS)))
        .addMethod(
          getElectLeadersMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.admin.v1.ElectLeadersRequest,
              leasehold.admin.v1.ElectLeadersResponse>(
                service, METHODID_ELECT_LEADERS)))
        .addMethod(
          getGetOperationMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.admin.v1.GetOperationRequest,
              leasehold.admin.v1.GetOperationResponse>(
                service, METHODID_GET_OPERATION)))
        .build();
  }

  private static abstract class AdminServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    AdminServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return leasehold.admin.v1.AdminProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("AdminService");
    }
  }

  private static final class AdminServiceFileDescriptorSupplier
      extends AdminServiceBaseDescriptorSupplier {
    AdminServiceFileDescriptorSupplier() {}
  }

  private static final class AdminServiceMethodDescriptorSupplier
      extends AdminServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    AdminServiceMethodDescriptorSupplier(java.lang.String methodName) {
      this.methodName = methodName;
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.MethodDescriptor getMethodDescriptor() {
      return getServiceDescriptor().findMethodByName(methodName);
    }
  }

  private static volatile io.grpc.ServiceDescriptor serviceDescriptor;

  public static io.grpc.ServiceDescriptor getServiceDescriptor() {
    io.grpc.ServiceDescriptor result = serviceDescriptor;
    if (result == null) {
      synchronized (AdminServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new AdminServiceFileDescriptorSupplier())
              .addMethod(getCreateTopicsMethod())
              .addMethod(getDeleteTopicsMethod())
              .addMethod(getCreatePartitionsMethod())
              .addMethod(getListTopicsMethod())
              .addMethod(getDescribeTopicsMethod())
              .addMethod(getDescribeClusterMethod())
              .addMethod(getDescribeConfigsMethod())
              .addMethod(getAlterConfigsMethod())
              .addMethod(getGenerateReassignmentMethod())
              .addMethod(getAlterPartitionReassignmentsMethod())
              .addMethod(getListPartitionReassignmentsMethod())
              .addMethod(getElectLeadersMethod())
              .addMethod(getGetOperationMethod())
              .build();
        }
      }
    }
    return result;
  }
}
