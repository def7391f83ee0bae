// The consumer group ops of the scenario: GroupService on the group's coordinator.
package main

import (
	"context"
	"errors"
	"fmt"

	groupv1 "leasehold/libs/go/leasehold/group/v1"
)

// member is what the last heartbeat answer gave.
type member struct {
	id    string
	epoch int32
	owned []*groupv1.TopicPartitions
}

func (r *runner) groupClient(address string) (groupv1.GroupServiceClient, error) {
	if address == "" {
		return nil, errors.New("no coordinator known")
	}
	c, err := r.conn(address)
	if err != nil {
		return nil, err
	}
	return groupv1.NewGroupServiceClient(c), nil
}

func (r *runner) findCoordinator(ctx context.Context, step obj) (obj, error) {
	first := int32(-1)
	for id := range r.brokers {
		if first < 0 || id < first {
			first = id
		}
	}
	client, err := r.groupClient(r.brokers[first])
	if err != nil {
		return nil, err
	}
	reply, err := client.FindCoordinator(ctx, &groupv1.FindCoordinatorRequest{GroupIds: []string{step["group"].(string)}})
	if err != nil {
		return nil, err
	}
	c := reply.GetCoordinators()[0]
	if c.GetErrorCode() == 0 {
		r.coordinator = fmt.Sprintf("%s:%d", c.GetHost(), c.GetPort())
	}
	return obj{"error": errorName(c.GetErrorCode())}, nil
}

func (r *runner) groupHeartbeat(ctx context.Context, step obj) (obj, error) {
	client, err := r.groupClient(r.coordinator)
	if err != nil {
		return nil, err
	}
	request := &groupv1.ConsumerGroupHeartbeatRequest{
		GroupId: step["group"].(string), MemberId: r.member.id, MemberEpoch: r.member.epoch,
	}
	switch {
	case step["leave"] == true:
		request.MemberEpoch = -1
	case r.member.epoch == 0:
		request.Subscription = &groupv1.Subscription{TopicNames: []string{step["topic"].(string)}}
		request.Owned = &groupv1.Assignment{}
	default:
		request.Owned = &groupv1.Assignment{TopicPartitions: r.member.owned}
	}
	reply, err := client.ConsumerGroupHeartbeat(ctx, request)
	if err != nil {
		return nil, err
	}
	if reply.GetAssignment() != nil {
		r.member.owned = reply.GetAssignment().GetTopicPartitions()
	}
	r.member.id, r.member.epoch = reply.GetMemberId(), max(reply.GetMemberEpoch(), 0)
	assigned := 0
	for _, t := range r.member.owned {
		assigned += len(t.GetPartitions())
	}
	return obj{"assigned": assigned, "member_epoch": reply.GetMemberEpoch()}, nil
}

func (r *runner) offsetCommit(ctx context.Context, step obj) (obj, error) {
	client, err := r.groupClient(r.coordinator)
	if err != nil {
		return nil, err
	}
	epoch := r.member.epoch
	if step["member_epoch"] != "current" {
		epoch = int32(num(step["member_epoch"]))
	}
	reply, err := client.OffsetCommit(ctx, &groupv1.OffsetCommitRequest{
		GroupId: step["group"].(string), MemberId: r.member.id, MemberEpoch: epoch,
		Topics: []*groupv1.OffsetCommitTopic{{
			Topic: step["topic"].(string),
			Partitions: []*groupv1.OffsetCommitPartition{{
				Partition: int32(num(step["partition"])), CommittedOffset: int64(num(step["offset"])),
			}},
		}},
	})
	if err != nil {
		return nil, err
	}
	return obj{"error": errorName(reply.GetTopics()[0].GetPartitions()[0].GetErrorCode())}, nil
}

func (r *runner) offsetFetch(ctx context.Context, step obj) (obj, error) {
	client, err := r.groupClient(r.coordinator)
	if err != nil {
		return nil, err
	}
	reply, err := client.OffsetFetch(ctx, &groupv1.OffsetFetchRequest{
		GroupId: step["group"].(string),
		Topics: []*groupv1.OffsetFetchTopic{{
			Topic: step["topic"].(string), Partitions: []int32{int32(num(step["partition"]))},
		}},
	})
	if err != nil {
		return nil, err
	}
	p := reply.GetTopics()[0].GetPartitions()[0]
	return obj{"error": errorName(p.GetErrorCode()), "offset": p.GetCommittedOffset()}, nil
}
