// The conformance scenario (tests/conformance/README.md) with google.golang.org/grpc and the
// generated Go code in libs/go.
//
//	go run . ../scenario.json
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	codepb "google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	refv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	refv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	adminv1 "leasehold/libs/go/leasehold/admin/v1"
	brokerv1 "leasehold/libs/go/leasehold/broker/v1"
	commonv1 "leasehold/libs/go/leasehold/common/v1"
)

type obj = map[string]any

type leader struct {
	id, epoch int32
	replicas  []int32
}

type runner struct {
	scenario obj
	topic    string
	admin    string
	creds    credentials.TransportCredentials
	conns    map[string]*grpc.ClientConn
	brokers  map[int32]string
	leaders  map[int32]leader
	// The consumer group steps (group.go): the group's coordinator and the member.
	coordinator string
	member      member
}

// --- plumbing ---------------------------------------------------------------------------------

func transportCredentials() (credentials.TransportCredentials, error) {
	ca := os.Getenv("LEASEHOLD_TLS_CA")
	if ca == "" {
		return insecure.NewCredentials(), nil
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", ca)
	}
	config := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert := os.Getenv("LEASEHOLD_TLS_CERT"); cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, os.Getenv("LEASEHOLD_TLS_KEY"))
		if err != nil {
			return nil, err
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return credentials.NewTLS(config), nil
}

func (r *runner) conn(address string) (*grpc.ClientConn, error) {
	if c, ok := r.conns[address]; ok {
		return c, nil
	}
	c, err := grpc.NewClient(address, grpc.WithTransportCredentials(r.creds))
	if err != nil {
		return nil, err
	}
	r.conns[address] = c
	return c, nil
}

func (r *runner) address(step obj) (string, error) {
	target := step["target"].(string)
	if target == "admin" {
		return r.admin, nil
	}
	l, ok := r.leaders[int32(num(step["partition"]))]
	if !ok {
		return "", errors.New("no leader known for that partition")
	}
	if target == "leader" {
		return r.brokers[l.id], nil
	}
	for _, replica := range l.replicas {
		if replica != l.id {
			return r.brokers[replica], nil
		}
	}
	return "", errors.New("the partition has no follower")
}

func num(v any) float64 { f, _ := v.(float64); return f }

func strs(v any) []string {
	out := []string{}
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func errorName(code commonv1.ErrorCode) string {
	return strings.TrimPrefix(code.String(), "ERROR_CODE_")
}

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

// failedCall is what a failed call carries: its status and the google.rpc.Status details.
func failedCall(err error) obj {
	st, ok := status.FromError(err)
	if !ok {
		return obj{"status": "RUNNER", "message": err.Error()}
	}
	// google.rpc.Code names the status as the other languages do (INVALID_ARGUMENT).
	out := obj{"status": codepb.Code(st.Code()).String(), "message": st.Message()}
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.ErrorInfo:
			var code float64
			fmt.Sscan(d.GetMetadata()["error_code"], &code)
			out["reason"], out["domain"], out["error_code"] = d.GetReason(), d.GetDomain(), code
		case *errdetails.BadRequest:
			if v := d.GetFieldViolations(); len(v) > 0 {
				out["field"] = v[0].GetField()
			}
		}
	}
	return out
}

// --- ops ----------------------------------------------------------------------------------------

func (r *runner) health(ctx context.Context, step obj) (obj, error) {
	address, err := r.address(step)
	if err != nil {
		return nil, err
	}
	c, err := r.conn(address)
	if err != nil {
		return nil, err
	}
	reply, err := healthpb.NewHealthClient(c).Check(ctx, &healthpb.HealthCheckRequest{Service: step["service"].(string)})
	if err != nil {
		return nil, err
	}
	return obj{"serving": reply.GetStatus().String()}, nil
}

func (r *runner) reflectionList(ctx context.Context, step obj) (obj, error) {
	address, err := r.address(step)
	if err != nil {
		return nil, err
	}
	c, err := r.conn(address)
	if err != nil {
		return nil, err
	}
	names := []any{}
	if step["version"] == "v1" {
		stream, err := refv1.NewServerReflectionClient(c).ServerReflectionInfo(ctx)
		if err != nil {
			return nil, err
		}
		if err := stream.Send(&refv1.ServerReflectionRequest{MessageRequest: &refv1.ServerReflectionRequest_ListServices{}}); err != nil {
			return nil, err
		}
		reply, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		for _, s := range reply.GetListServicesResponse().GetService() {
			names = append(names, s.GetName())
		}
		return obj{"services": names}, stream.CloseSend()
	}
	stream, err := refv1alpha.NewServerReflectionClient(c).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&refv1alpha.ServerReflectionRequest{MessageRequest: &refv1alpha.ServerReflectionRequest_ListServices{}}); err != nil {
		return nil, err
	}
	reply, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	for _, s := range reply.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	return obj{"services": names}, stream.CloseSend()
}

func (r *runner) adminClient() (adminv1.AdminServiceClient, error) {
	c, err := r.conn(r.admin)
	if err != nil {
		return nil, err
	}
	return adminv1.NewAdminServiceClient(c), nil
}

func (r *runner) describeCluster(ctx context.Context, step obj) (obj, error) {
	admin, err := r.adminClient()
	if err != nil {
		return nil, err
	}
	reply, err := admin.DescribeCluster(ctx, &adminv1.DescribeClusterRequest{})
	if err != nil {
		return nil, err
	}
	for _, b := range reply.GetBrokers() {
		r.brokers[b.GetBrokerId()] = fmt.Sprintf("%s:%d", b.GetHost(), b.GetPort())
	}
	return obj{"brokers": len(reply.GetBrokers()), "controller": reply.GetActiveController() != nil}, nil
}

func (r *runner) createTopics(ctx context.Context, step obj) (obj, error) {
	admin, err := r.adminClient()
	if err != nil {
		return nil, err
	}
	request := &adminv1.CreateTopicsRequest{TimeoutMs: int32(num(step["timeout_ms"]))}
	for _, t := range step["topics"].([]any) {
		topic := t.(obj)
		creatable := &adminv1.CreatableTopic{Name: topic["name"].(string)}
		if v, ok := topic["partitions"]; ok { // absent: the cluster default
			creatable.NumPartitions = proto.Int32(int32(num(v)))
		}
		if v, ok := topic["replication_factor"]; ok {
			creatable.ReplicationFactor = proto.Int32(int32(num(v)))
		}
		request.Topics = append(request.Topics, creatable)
	}
	reply, err := admin.CreateTopics(ctx, request)
	if err != nil {
		return nil, err
	}
	results := []any{}
	for _, t := range reply.GetTopics() {
		results = append(results, obj{"name": t.GetName(), "error": errorName(t.GetErrorCode())})
	}
	return obj{"results": results}, nil
}

func (r *runner) deleteTopics(ctx context.Context, step obj) (obj, error) {
	admin, err := r.adminClient()
	if err != nil {
		return nil, err
	}
	reply, err := admin.DeleteTopics(ctx, &adminv1.DeleteTopicsRequest{
		TopicNames: strs(step["topics"]), TimeoutMs: int32(num(step["timeout_ms"])),
	})
	if err != nil {
		return nil, err
	}
	results := []any{}
	for _, t := range reply.GetTopics() {
		results = append(results, obj{"name": t.GetName(), "error": errorName(t.GetErrorCode())})
	}
	return obj{"results": results}, nil
}

func (r *runner) describeTopics(ctx context.Context, step obj) (obj, error) {
	admin, err := r.adminClient()
	if err != nil {
		return nil, err
	}
	reply, err := admin.DescribeTopics(ctx, &adminv1.DescribeTopicsRequest{Topics: strs(step["topics"])})
	if err != nil {
		return nil, err
	}
	topics := []any{}
	for _, t := range reply.GetTopics() {
		rf := 0
		if len(t.GetPartitions()) > 0 {
			rf = len(t.GetPartitions()[0].GetReplicas())
		}
		topics = append(topics, obj{"name": t.GetName(), "partitions": len(t.GetPartitions()), "replication_factor": rf})
	}
	return obj{"topics": topics}, nil
}

func (r *runner) findLeaders(ctx context.Context, step obj) (obj, error) {
	admin, err := r.adminClient()
	if err != nil {
		return nil, err
	}
	reply, err := admin.DescribeTopics(ctx, &adminv1.DescribeTopicsRequest{Topics: []string{step["topic"].(string)}})
	if err != nil {
		return nil, err
	}
	r.leaders = map[int32]leader{}
	for _, p := range reply.GetTopics()[0].GetPartitions() {
		if p.GetLeader() >= 0 {
			r.leaders[p.GetPartition()] = leader{p.GetLeader(), p.GetLeaderEpoch(), p.GetReplicas()}
		}
	}
	return obj{"partitions": len(r.leaders)}, nil
}

func (r *runner) brokerClient(step obj) (brokerv1.BrokerServiceClient, error) {
	address, err := r.address(step)
	if err != nil {
		return nil, err
	}
	c, err := r.conn(address)
	if err != nil {
		return nil, err
	}
	return brokerv1.NewBrokerServiceClient(c), nil
}

func (r *runner) produce(ctx context.Context, step obj) (obj, error) {
	broker, err := r.brokerClient(step)
	if err != nil {
		return nil, err
	}
	records := []*brokerv1.Record{}
	for _, raw := range r.scenario["records"].([]any) {
		spec, record := raw.(obj), &brokerv1.Record{}
		if k, ok := spec["key"]; ok { // an absent key stays absent (a null key, as Kafka's)
			record.Key, _ = base64.StdEncoding.DecodeString(k.(string))
		}
		if v, ok := spec["value"]; ok {
			record.Value, _ = base64.StdEncoding.DecodeString(v.(string))
		}
		records = append(records, record)
	}
	reply, err := broker.Produce(ctx, &brokerv1.ProduceRequest{
		Acks:      proto.Int32(int32(num(step["acks"]))),
		TimeoutMs: 10000,
		Topics: []*brokerv1.TopicProduceData{{
			Topic: step["topic"].(string),
			// No CurrentLeaderEpoch: absent is "not checked".
			Partitions: []*brokerv1.PartitionProduceData{{Partition: int32(num(step["partition"])), Records: records}},
		}},
	})
	if err != nil {
		return nil, err
	}
	p := reply.GetTopics()[0].GetPartitions()[0]
	out := obj{"error": errorName(p.GetErrorCode()), "base_offset": p.GetBaseOffset()}
	if p.GetCurrentLeader() != nil {
		out["current_leader"] = p.GetCurrentLeader().GetLeaderId()
	}
	return out, nil
}

func (r *runner) fetch(ctx context.Context, step obj) (obj, error) {
	broker, err := r.brokerClient(step)
	if err != nil {
		return nil, err
	}
	format := brokerv1.RecordFormat(num(step["record_format"]))
	if name, ok := step["record_format"].(string); ok {
		format = brokerv1.RecordFormat(brokerv1.RecordFormat_value["RECORD_FORMAT_"+name])
	}
	partition := &brokerv1.FetchPartition{
		Partition:         int32(num(step["partition"])),
		FetchOffset:       int64(num(step["offset"])),
		PartitionMaxBytes: 1 << 20,
	}
	if step["current_leader_epoch"] == "leader_epoch" {
		partition.CurrentLeaderEpoch = proto.Int32(r.leaders[partition.Partition].epoch)
	}
	// No ReplicaId: absent is a consumer.
	reply, err := broker.Fetch(ctx, &brokerv1.FetchRequest{
		MaxWaitMs: 500, MinBytes: 1, MaxBytes: 1 << 20, RecordFormat: format,
		Topics: []*brokerv1.FetchTopic{{Topic: step["topic"].(string), Partitions: []*brokerv1.FetchPartition{partition}}},
	})
	if err != nil {
		return nil, err
	}
	p := reply.GetTopics()[0].GetPartitions()[0]
	records := []any{}
	for _, record := range p.GetDecodedRecords() {
		got := obj{}
		if record.Key != nil {
			got["key"] = b64(record.Key)
		}
		if record.Value != nil {
			got["value"] = b64(record.Value)
		}
		records = append(records, got)
	}
	return obj{"error": errorName(p.GetErrorCode()), "records": records}, nil
}

// --- expectations -----------------------------------------------------------------------------

// normal makes numbers float64 and slices []any, as encoding/json reads the scenario.
func normal(v any) any {
	data, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

func (r *runner) problem(step, outcome obj) string {
	expect := step["expect"].(obj)
	_, wantFail := expect["status"]
	_, failed := outcome["status"]
	if wantFail && !failed {
		return fmt.Sprintf("expected the call to fail with %v, it succeeded: %v", expect["status"], outcome)
	}
	if !wantFail && failed {
		return fmt.Sprintf("the call failed: %v %v", outcome["status"], outcome["message"])
	}
	got := normal(outcome).(obj)
	for key, want := range expect {
		switch {
		case key == "includes":
			for _, name := range want.([]any) {
				found := false
				for _, s := range got["services"].([]any) {
					found = found || s == name
				}
				if !found {
					return fmt.Sprintf("reflection lists %v, not %v", got["services"], name)
				}
			}
		case key == "records" && want == "records":
			if !reflect.DeepEqual(got["records"], r.scenario["records"]) {
				return fmt.Sprintf("fetched %v, produced %v", got["records"], r.scenario["records"])
			}
		case key == "current_leader" && want == "leader":
			l := r.leaders[int32(num(step["partition"]))]
			if num(got["current_leader"]) != float64(l.id) {
				return fmt.Sprintf("current_leader %v, the leader is %d", got["current_leader"], l.id)
			}
		default:
			if !reflect.DeepEqual(got[key], want) {
				return fmt.Sprintf("%s: expected %v, got %v", key, want, got[key])
			}
		}
	}
	return ""
}

func (r *runner) runStep(step obj) string {
	ops := map[string]func(context.Context, obj) (obj, error){
		"health": r.health, "reflection_list": r.reflectionList, "describe_cluster": r.describeCluster,
		"create_topics": r.createTopics, "delete_topics": r.deleteTopics, "describe_topics": r.describeTopics,
		"find_leaders": r.findLeaders, "produce": r.produce, "fetch": r.fetch,
		"find_coordinator": r.findCoordinator, "group_heartbeat": r.groupHeartbeat,
		"offset_commit": r.offsetCommit, "offset_fetch": r.offsetFetch,
	}
	op, ok := ops[step["op"].(string)]
	if !ok {
		return fmt.Sprintf("unknown op %v", step["op"])
	}
	deadline := time.Now().Add(time.Duration(num(step["wait_ms"])) * time.Millisecond)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		outcome, err := op(ctx, step)
		cancel()
		if err != nil {
			outcome = failedCall(err)
		}
		problem := r.problem(step, outcome)
		if problem == "" || time.Now().After(deadline) {
			return problem
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func subst(v any, topic string) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "$topic", topic)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = subst(e, topic)
		}
		return out
	case obj:
		out := obj{}
		for k, e := range x {
			out[k] = subst(e, topic)
		}
		return out
	}
	return v
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: conformance-go SCENARIO.json")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var scenario obj
	if err := json.Unmarshal(data, &scenario); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	creds, err := transportCredentials()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	r := &runner{
		scenario: scenario, topic: os.Getenv("LEASEHOLD_TOPIC"), admin: os.Getenv("LEASEHOLD_ADMIN"),
		creds: creds, conns: map[string]*grpc.ClientConn{}, brokers: map[int32]string{}, leaders: map[int32]leader{},
	}
	if r.topic == "" {
		r.topic = fmt.Sprintf("conformance-go-%d", os.Getpid())
	}
	if r.admin == "" {
		r.admin = "127.0.0.1:9093"
	}
	passed, failed := 0, 0
	for _, raw := range scenario["steps"].([]any) {
		step := subst(raw, r.topic).(obj)
		if problem := r.runStep(step); problem == "" {
			passed++
			fmt.Printf("ok %s\n", step["id"])
		} else {
			failed++
			fmt.Printf("FAIL %s: %s\n", step["id"], problem)
		}
	}
	for _, c := range r.conns {
		c.Close()
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
