package leasehold.broker.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * BrokerService is called by clients (produce, consume, metadata) and by
 * follower replicas (fetch, offsets for leader epoch).
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class BrokerServiceGrpc {

  private BrokerServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "leasehold.broker.v1.BrokerService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<leasehold.broker.v1.ProduceRequest,
      leasehold.broker.v1.ProduceResponse> getProduceMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Produce",
      requestType = leasehold.broker.v1.ProduceRequest.class,
      responseType = leasehold.broker.v1.ProduceResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.broker.v1.ProduceRequest,
      leasehold.broker.v1.ProduceResponse> getProduceMethod() {
    io.grpc.MethodDescriptor<leasehold.broker.v1.ProduceRequest, leasehold.broker.v1.ProduceResponse> getProduceMethod;
    if ((getProduceMethod = BrokerServiceGrpc.getProduceMethod) == null) {
      synchronized (BrokerServiceGrpc.class) {
        if ((getProduceMethod = BrokerServiceGrpc.getProduceMethod) == null) {
          BrokerServiceGrpc.getProduceMethod = getProduceMethod =
              io.grpc.MethodDescriptor.<leasehold.broker.v1.ProduceRequest, leasehold.broker.v1.ProduceResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Produce"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.broker.v1.ProduceRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.broker.v1.ProduceResponse.getDefaultInstance()))
              .setSchemaDescriptor(new BrokerServiceMethodDescriptorSupplier("Produce"))
              .build();
        }
      }
    }
    return getProduceMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.broker.v1.FetchRequest,
      leasehold.broker.v1.FetchResponse> getFetchMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Fetch",
      requestType = leasehold.broker.v1.FetchRequest.class,
      responseType = leasehold.broker.v1.FetchResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.broker.v1.FetchRequest,
      leasehold.broker.v1.FetchResponse> getFetchMethod() {
    io.grpc.MethodDescriptor<leasehold.broker.v1.FetchRequest, leasehold.broker.v1.FetchResponse> getFetchMethod;
    if ((getFetchMethod = BrokerServiceGrpc.getFetchMethod) == null) {
      synchronized (BrokerServiceGrpc.class) {
        if ((getFetchMethod = BrokerServiceGrpc.getFetchMethod) == null) {
          BrokerServiceGrpc.getFetchMethod = getFetchMethod =
              io.grpc.MethodDescriptor.<leasehold.broker.v1.FetchRequest, leasehold.broker.v1.FetchResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Fetch"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.broker.v1.FetchRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.broker.v1.FetchResponse.getDefaultInstance()))
              .setSchemaDescriptor(new BrokerServiceMethodDescriptorSupplier("Fetch"))
              .build();
        }
      }
    }
    return getFetchMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.broker.v1.ListOffsetsRequest,
      leasehold.broker.v1.ListOffsetsResponse> getListOffsetsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListOffsets",
      requestType = leasehold.broker.v1.ListOffsetsRequest.class,
      responseType = leasehold.broker.v1.ListOffsetsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.broker.v1.ListOffsetsRequest,
      leasehold.broker.v1.ListOffsetsResponse> getListOffsetsMethod() {
    io.grpc.MethodDescriptor<leasehold.broker.v1.ListOffsetsRequest, leasehold.broker.v1.ListOffsetsResponse> getListOffsetsMethod;
    if ((getListOffsetsMethod = BrokerServiceGrpc.getListOffsetsMethod) == null) {
      synchronized (BrokerServiceGrpc.class) {
        if ((getListOffsetsMethod = BrokerServiceGrpc.getListOffsetsMethod) == null) {
          BrokerServiceGrpc.getListOffsetsMethod = getListOffsetsMethod =
              io.grpc.MethodDescriptor.<leasehold.broker.v1.ListOffsetsRequest, leasehold.broker.v1.ListOffsetsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListOffsets"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.broker.v1.ListOffsetsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.broker.v1.ListOffsetsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new BrokerServiceMethodDescriptorSupplier("ListOffsets"))
              .build();
        }
      }
    }
    return getListOffsetsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.broker.v1.OffsetsForLeaderEpochRequest,
      leasehold.broker.v1.OffsetsForLeaderEpochResponse> getOffsetsForLeaderEpochMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "OffsetsForLeaderEpoch",
      requestType = leasehold.broker.v1.OffsetsForLeaderEpochRequest.class,
      responseType = leasehold.broker.v1.OffsetsForLeaderEpochResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.broker.v1.OffsetsForLeaderEpochRequest,
      leasehold.broker.v1.OffsetsForLeaderEpochResponse> getOffsetsForLeaderEpochMethod() {
    io.grpc.MethodDescriptor<leasehold.broker.v1.OffsetsForLeaderEpochRequest, leasehold.broker.v1.OffsetsForLeaderEpochResponse> getOffsetsForLeaderEpochMethod;
    if ((getOffsetsForLeaderEpochMethod = BrokerServiceGrpc.getOffsetsForLeaderEpochMethod) == null) {
      synchronized (BrokerServiceGrpc.class) {
        if ((getOffsetsForLeaderEpochMethod = BrokerServiceGrpc.getOffsetsForLeaderEpochMethod) == null) {
          BrokerServiceGrpc.getOffsetsForLeaderEpochMethod = getOffsetsForLeaderEpochMethod =
              io.grpc.MethodDescriptor.<leasehold.broker.v1.OffsetsForLeaderEpochRequest, leasehold.broker.v1.OffsetsForLeaderEpochResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "OffsetsForLeaderEpoch"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.broker.v1.OffsetsForLeaderEpochRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.broker.v1.OffsetsForLeaderEpochResponse.getDefaultInstance()))
              .setSchemaDescriptor(new BrokerServiceMethodDescriptorSupplier("OffsetsForLeaderEpoch"))
              .build();
        }
      }
    }
    return getOffsetsForLeaderEpochMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.broker.v1.MetadataRequest,
      leasehold.broker.v1.MetadataResponse> getMetadataMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Metadata",
      requestType = leasehold.broker.v1.MetadataRequest.class,
      responseType = leasehold.broker.v1.MetadataResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.broker.v1.MetadataRequest,
      leasehold.broker.v1.MetadataResponse> getMetadataMethod() {
    io.grpc.MethodDescriptor<leasehold.broker.v1.MetadataRequest, leasehold.broker.v1.MetadataResponse> getMetadataMethod;
    if ((getMetadataMethod = BrokerServiceGrpc.getMetadataMethod) == null) {
      synchronized (BrokerServiceGrpc.class) {
        if ((getMetadataMethod = BrokerServiceGrpc.getMetadataMethod) == null) {
          BrokerServiceGrpc.getMetadataMethod = getMetadataMethod =
              io.grpc.MethodDescriptor.<leasehold.broker.v1.MetadataRequest, leasehold.broker.v1.MetadataResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Metadata"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.broker.v1.MetadataRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.broker.v1.MetadataResponse.getDefaultInstance()))
              .setSchemaDescriptor(new BrokerServiceMethodDescriptorSupplier("Metadata"))
              .build();
        }
      }
    }
    return getMetadataMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.broker.v1.InitProducerIdRequest,
      leasehold.broker.v1.InitProducerIdResponse> getInitProducerIdMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "InitProducerId",
      requestType = leasehold.broker.v1.InitProducerIdRequest.class,
      responseType = leasehold.broker.v1.InitProducerIdResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.broker.v1.InitProducerIdRequest,
      leasehold.broker.v1.InitProducerIdResponse> getInitProducerIdMethod() {
    io.grpc.MethodDescriptor<leasehold.broker.v1.InitProducerIdRequest, leasehold.broker.v1.InitProducerIdResponse> getInitProducerIdMethod;
    if ((getInitProducerIdMethod = BrokerServiceGrpc.getInitProducerIdMethod) == null) {
      synchronized (BrokerServiceGrpc.class) {
        if ((getInitProducerIdMethod = BrokerServiceGrpc.getInitProducerIdMethod) == null) {
          BrokerServiceGrpc.getInitProducerIdMethod = getInitProducerIdMethod =
              io.grpc.MethodDescriptor.<leasehold.broker.v1.InitProducerIdRequest, leasehold.broker.v1.InitProducerIdResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "InitProducerId"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.broker.v1.InitProducerIdRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.broker.v1.InitProducerIdResponse.getDefaultInstance()))
              .setSchemaDescriptor(new BrokerServiceMethodDescriptorSupplier("InitProducerId"))
              .build();
        }
      }
    }
    return getInitProducerIdMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static BrokerServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<BrokerServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<BrokerServiceStub>() {
        @java.lang.Override
        public BrokerServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new BrokerServiceStub(channel, callOptions);
        }
      };
    return BrokerServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static BrokerServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<BrokerServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<BrokerServiceBlockingV2Stub>() {
        @java.lang.Override
        public BrokerServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new BrokerServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return BrokerServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static BrokerServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<BrokerServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<BrokerServiceBlockingStub>() {
        @java.lang.Override
        public BrokerServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new BrokerServiceBlockingStub(channel, callOptions);
        }
      };
    return BrokerServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static BrokerServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<BrokerServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<BrokerServiceFutureStub>() {
        @java.lang.Override
        public BrokerServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new BrokerServiceFutureStub(channel, callOptions);
        }
      };
    return BrokerServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * BrokerService is called by clients (produce, consume, metadata) and by
   * follower replicas (fetch, offsets for leader epoch).
   * </pre>
   */
  public interface AsyncService {

    /**
     */
    default void produce(leasehold.broker.v1.ProduceRequest request,
        io.grpc.stub.StreamObserver<leasehold.broker.v1.ProduceResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getProduceMethod(), responseObserver);
    }

    /**
     */
    default void fetch(leasehold.broker.v1.FetchRequest request,
        io.grpc.stub.StreamObserver<leasehold.broker.v1.FetchResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getFetchMethod(), responseObserver);
    }

    /**
     */
    default void listOffsets(leasehold.broker.v1.ListOffsetsRequest request,
        io.grpc.stub.StreamObserver<leasehold.broker.v1.ListOffsetsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListOffsetsMethod(), responseObserver);
    }

    /**
     */
    default void offsetsForLeaderEpoch(leasehold.broker.v1.OffsetsForLeaderEpochRequest request,
        io.grpc.stub.StreamObserver<leasehold.broker.v1.OffsetsForLeaderEpochResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getOffsetsForLeaderEpochMethod(), responseObserver);
    }

    /**
     */
    default void metadata(leasehold.broker.v1.MetadataRequest request,
        io.grpc.stub.StreamObserver<leasehold.broker.v1.MetadataResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getMetadataMethod(), responseObserver);
    }

    /**
     * <pre>
     * A producer id for an idempotent producer (Kafka's InitProducerId without transactions).
     * </pre>
     */
    default void initProducerId(leasehold.broker.v1.InitProducerIdRequest request,
        io.grpc.stub.StreamObserver<leasehold.broker.v1.InitProducerIdResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getInitProducerIdMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service BrokerService.
   * <pre>
   * BrokerService is called by clients (produce, consume, metadata) and by
   * follower replicas (fetch, offsets for leader epoch).
   * </pre>
   */
  public static abstract class BrokerServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return BrokerServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service BrokerService.
   * <pre>
   * BrokerService is called by clients (produce, consume, metadata) and by
   * follower replicas (fetch, offsets for leader epoch).
   * </pre>
   */
  public static final class BrokerServiceStub
      extends io.grpc.stub.AbstractAsyncStub<BrokerServiceStub> {
    private BrokerServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected BrokerServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new BrokerServiceStub(channel, callOptions);
    }

    /**
     */
    public void produce(leasehold.broker.v1.ProduceRequest request,
        io.grpc.stub.StreamObserver<leasehold.broker.v1.ProduceResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getProduceMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void fetch(leasehold.broker.v1.FetchRequest request,
        io.grpc.stub.StreamObserver<leasehold.broker.v1.FetchResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getFetchMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void listOffsets(leasehold.broker.v1.ListOffsetsRequest request,
        io.grpc.stub.StreamObserver<leasehold.broker.v1.ListOffsetsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListOffsetsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void offsetsForLeaderEpoch(leasehold.broker.v1.OffsetsForLeaderEpochRequest request,
        io.grpc.stub.StreamObserver<leasehold.broker.v1.OffsetsForLeaderEpochResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getOffsetsForLeaderEpochMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     */
    public void metadata(leasehold.broker.v1.MetadataRequest request,
        io.grpc.stub.StreamObserver<leasehold.broker.v1.MetadataResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getMetadataMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * A producer id for an idempotent producer (Kafka's InitProducerId without transactions).
     * </pre>
     */
    public void initProducerId(leasehold.broker.v1.InitProducerIdRequest request,
        io.grpc.stub.StreamObserver<leasehold.broker.v1.InitProducerIdResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getInitProducerIdMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service BrokerService.
   * <pre>
   * BrokerService is called by clients (produce, consume, metadata) and by
   * follower replicas (fetch, offsets for leader epoch).
   * </pre>
   */
  public static final class BrokerServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<BrokerServiceBlockingV2Stub> {
    private BrokerServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected BrokerServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new BrokerServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     */
    public leasehold.broker.v1.ProduceResponse produce(leasehold.broker.v1.ProduceRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getProduceMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.broker.v1.FetchResponse fetch(leasehold.broker.v1.FetchRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getFetchMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.broker.v1.ListOffsetsResponse listOffsets(leasehold.broker.v1.ListOffsetsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListOffsetsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.broker.v1.OffsetsForLeaderEpochResponse offsetsForLeaderEpoch(leasehold.broker.v1.OffsetsForLeaderEpochRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getOffsetsForLeaderEpochMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.broker.v1.MetadataResponse metadata(leasehold.broker.v1.MetadataRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getMetadataMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * A producer id for an idempotent producer (Kafka's InitProducerId without transactions).
     * </pre>
     */
    public leasehold.broker.v1.InitProducerIdResponse initProducerId(leasehold.broker.v1.InitProducerIdRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getInitProducerIdMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service BrokerService.
   * <pre>
   * BrokerService is called by clients (produce, consume, metadata) and by
   * follower replicas (fetch, offsets for leader epoch).
   * </pre>
   */
  public static final class BrokerServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<BrokerServiceBlockingStub> {
    private BrokerServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected BrokerServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new BrokerServiceBlockingStub(channel, callOptions);
    }

    /**
     */
    public leasehold.broker.v1.ProduceResponse produce(leasehold.broker.v1.ProduceRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getProduceMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.broker.v1.FetchResponse fetch(leasehold.broker.v1.FetchRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getFetchMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.broker.v1.ListOffsetsResponse listOffsets(leasehold.broker.v1.ListOffsetsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListOffsetsMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.broker.v1.OffsetsForLeaderEpochResponse offsetsForLeaderEpoch(leasehold.broker.v1.OffsetsForLeaderEpochRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getOffsetsForLeaderEpochMethod(), getCallOptions(), request);
    }

    /**
     */
    public leasehold.broker.v1.MetadataResponse metadata(leasehold.broker.v1.MetadataRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getMetadataMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * A producer id for an idempotent producer (Kafka's InitProducerId without transactions).
     * </pre>
     */
    public leasehold.broker.v1.InitProducerIdResponse initProducerId(leasehold.broker.v1.InitProducerIdRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getInitProducerIdMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service BrokerService.
   * <pre>
   * BrokerService is called by clients (produce, consume, metadata) and by
   * follower replicas (fetch, offsets for leader epoch).
   * </pre>
   */
  public static final class BrokerServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<BrokerServiceFutureStub> {
    private BrokerServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected BrokerServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new BrokerServiceFutureStub(channel, callOptions);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.broker.v1.ProduceResponse> produce(
        leasehold.broker.v1.ProduceRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getProduceMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.broker.v1.FetchResponse> fetch(
        leasehold.broker.v1.FetchRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getFetchMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.broker.v1.ListOffsetsResponse> listOffsets(
        leasehold.broker.v1.ListOffsetsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListOffsetsMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.broker.v1.OffsetsForLeaderEpochResponse> offsetsForLeaderEpoch(
        leasehold.broker.v1.OffsetsForLeaderEpochRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getOffsetsForLeaderEpochMethod(), getCallOptions()), request);
    }

    /**
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.broker.v1.MetadataResponse> metadata(
        leasehold.broker.v1.MetadataRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getMetadataMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * A producer id for an idempotent producer (Kafka's InitProducerId without transactions).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.broker.v1.InitProducerIdResponse> initProducerId(
        leasehold.broker.v1.InitProducerIdRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getInitProducerIdMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_PRODUCE = 0;
  private static final int METHODID_FETCH = 1;
  private static final int METHODID_LIST_OFFSETS = 2;
  private static final int METHODID_OFFSETS_FOR_LEADER_EPOCH = 3;
  private static final int METHODID_METADATA = 4;
  private static final int METHODID_INIT_PRODUCER_ID = 5;

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
        case METHODID_PRODUCE:
          serviceImpl.produce((leasehold.broker.v1.ProduceRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.broker.v1.ProduceResponse>) responseObserver);
          break;
        case METHODID_FETCH:
          serviceImpl.fetch((leasehold.broker.v1.FetchRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.broker.v1.FetchResponse>) responseObserver);
          break;
        case METHODID_LIST_OFFSETS:
          serviceImpl.listOffsets((leasehold.broker.v1.ListOffsetsRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.broker.v1.ListOffsetsResponse>) responseObserver);
          break;
        case METHODID_OFFSETS_FOR_LEADER_EPOCH:
          serviceImpl.offsetsForLeaderEpoch((leasehold.broker.v1.OffsetsForLeaderEpochRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.broker.v1.OffsetsForLeaderEpochResponse>) responseObserver);
          break;
        case METHODID_METADATA:
          serviceImpl.metadata((leasehold.broker.v1.MetadataRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.broker.v1.MetadataResponse>) responseObserver);
          break;
        case METHODID_INIT_PRODUCER_ID:
          serviceImpl.initProducerId((leasehold.broker.v1.InitProducerIdRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.broker.v1.InitProducerIdResponse>) responseObserver);
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
          getProduceMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.broker.v1.ProduceRequest,
              leasehold.broker.v1.ProduceResponse>(
                service, METHODID_PRODUCE)))
        .addMethod(
          getFetchMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.broker.v1.FetchRequest,
              leasehold.broker.v1.FetchResponse>(
                service, METHODID_FETCH)))
        .addMethod(
          getListOffsetsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.broker.v1.ListOffsetsRequest,
              leasehold.broker.v1.ListOffsetsResponse>(
                service, METHODID_LIST_OFFSETS)))
        .addMethod(
          getOffsetsForLeaderEpochMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.broker.v1.OffsetsForLeaderEpochRequest,
              leasehold.broker.v1.OffsetsForLeaderEpochResponse>(
                service, METHODID_OFFSETS_FOR_LEADER_EPOCH)))
        .addMethod(
          getMetadataMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.broker.v1.MetadataRequest,
              leasehold.broker.v1.MetadataResponse>(
                service, METHODID_METADATA)))
        .addMethod(
          getInitProducerIdMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.broker.v1.InitProducerIdRequest,
              leasehold.broker.v1.InitProducerIdResponse>(
                service, METHODID_INIT_PRODUCER_ID)))
        .build();
  }

  private static abstract class BrokerServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    BrokerServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return leasehold.broker.v1.BrokerProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("BrokerService");
    }
  }

  private static final class BrokerServiceFileDescriptorSupplier
      extends BrokerServiceBaseDescriptorSupplier {
    BrokerServiceFileDescriptorSupplier() {}
  }

  private static final class BrokerServiceMethodDescriptorSupplier
      extends BrokerServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    BrokerServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (BrokerServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new BrokerServiceFileDescriptorSupplier())
              .addMethod(getProduceMethod())
              .addMethod(getFetchMethod())
              .addMethod(getListOffsetsMethod())
              .addMethod(getOffsetsForLeaderEpochMethod())
              .addMethod(getMetadataMethod())
              .addMethod(getInitProducerIdMethod())
              .build();
        }
      }
    }
    return result;
  }
}
