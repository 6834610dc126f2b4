package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/tools/group"
)

// validTopicName applies Kafka's rules: 1 to 249 of [a-zA-Z0-9._-], not "." or "..".
func validTopicName(n string) error {
	if n == "" || len(n) > 249 || n == "." || n == ".." {
		return fmt.Errorf("invalid topic name %q", n)
	}
	for _, r := range n {
		if !(r == '.' || r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return fmt.Errorf("invalid topic name %q: only letters, digits, '.', '_' and '-'", n)
		}
	}
	return nil
}

// actionRequest is the body of every action; each action reads the fields it needs.
type actionRequest struct {
	Topic             string            `json:"topic"`
	Partition         *int32            `json:"partition"`
	Partitions        int               `json:"partitions"`
	ReplicationFactor int               `json:"replication_factor"`
	Configs           map[string]string `json:"configs"`
	Name              string            `json:"name"`
	Value             *string           `json:"value"`
	Group             string            `json:"group"`
	To                string            `json:"to"`
	Offset            int64             `json:"offset"`
	Timestamp         int64             `json:"timestamp"`
	Execute           bool              `json:"execute"`
}

type actionResult struct {
	Message string `json:"message"`
	Rows    []any  `json:"rows,omitempty"`
	DryRun  bool   `json:"dry_run,omitempty"`
}

func (s *Server) apiAction(w http.ResponseWriter, r *http.Request) {
	if s.cfg.ReadOnly {
		writeError(w, http.StatusForbidden, errors.New("the console runs with --read-only"))
		return
	}
	if err := s.guard.checkAction(r); err != nil {
		writeError(w, http.StatusForbidden, err)
		return
	}
	var req actionRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxActionBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("bad request body: %w", err))
		return
	}
	ctx, cancel := s.f.RequestContext(r.Context())
	defer cancel()
	var res actionResult
	var err error
	switch r.PathValue("action") {
	case "elect":
		res, err = s.elect(ctx, req)
	case "create-topic":
		res, err = s.createTopic(ctx, req)
	case "add-partitions":
		res, err = s.addPartitions(ctx, req)
	case "alter-config":
		res, err = s.alterConfig(ctx, req)
	case "reset-offsets":
		res, err = s.resetOffsets(ctx, req)
	case "delete-group":
		res, err = s.deleteGroup(ctx, req)
	case "delete-records":
		res, err = s.deleteRecords(ctx, req)
	default:
		writeError(w, http.StatusNotFound, fmt.Errorf("no action %q", r.PathValue("action")))
		return
	}
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, err)
		return
	}
	// The next snapshot shows the effect at once rather than a refresh later.
	s.cache.invalidate()
	writeJSON(w, res)
}

func (s *Server) elect(ctx context.Context, req actionRequest) (actionResult, error) {
	var set kadm.TopicsSet
	scope := "all partitions"
	if req.Topic != "" {
		if err := validTopicName(req.Topic); err != nil {
			return actionResult{}, err
		}
		snap, err := s.cache.get(ctx)
		if err != nil {
			return actionResult{}, err
		}
		t, ok := snap.byName[req.Topic]
		if !ok {
			return actionResult{}, fmt.Errorf("no topic %q", req.Topic)
		}
		set = kadm.TopicsSet{}
		if req.Partition != nil {
			set.Add(req.Topic, *req.Partition)
			scope = fmt.Sprintf("partition %s-%d", req.Topic, *req.Partition)
		} else {
			for _, p := range t.Partitions {
				set.Add(req.Topic, p.Partition.Partition)
			}
			scope = "topic " + req.Topic
		}
	}
	rs, err := s.cache.adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		return actionResult{}, s.f.ClusterError("electing preferred leaders", err)
	}
	res := actionResult{}
	elected, already, failed := 0, 0, 0
	for _, ps := range rs {
		for _, p := range ps {
			row := map[string]any{"topic": p.Topic, "partition": p.Partition, "result": "elected"}
			switch {
			case p.Err == nil:
				elected++
			case errors.Is(p.Err, kerr.ElectionNotNeeded):
				already++
				row["result"] = "preferred leader already leads"
			default:
				failed++
				row["result"] = p.Err.Error()
			}
			if len(res.Rows) < 1000 {
				res.Rows = append(res.Rows, row)
			}
		}
	}
	res.Message = fmt.Sprintf("preferred election on %s: %d elected, %d already led by their preferred replica, %d failed",
		scope, elected, already, failed)
	return res, nil
}

func (s *Server) createTopic(ctx context.Context, req actionRequest) (actionResult, error) {
	if err := validTopicName(req.Topic); err != nil {
		return actionResult{}, err
	}
	if req.Partitions < 1 || req.Partitions > 10000 || req.ReplicationFactor < 1 || req.ReplicationFactor > 32 {
		return actionResult{}, errors.New("partitions must be 1..10000 and replication factor 1..32")
	}
	cfgs := map[string]*string{}
	for k, v := range req.Configs {
		cfgs[k] = &v
	}
	resp, err := s.cache.adm.CreateTopic(ctx, int32(req.Partitions), int16(req.ReplicationFactor), cfgs, req.Topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return actionResult{}, s.f.ClusterError("creating topic "+req.Topic, err)
	}
	return actionResult{Message: fmt.Sprintf("created topic %s with %d partitions, replication factor %d", req.Topic, req.Partitions, req.ReplicationFactor)}, nil
}

func (s *Server) addPartitions(ctx context.Context, req actionRequest) (actionResult, error) {
	if err := validTopicName(req.Topic); err != nil {
		return actionResult{}, err
	}
	if req.Partitions < 1 || req.Partitions > 10000 {
		return actionResult{}, errors.New("add 1..10000 partitions")
	}
	rs, err := s.cache.adm.CreatePartitions(ctx, req.Partitions, req.Topic)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		return actionResult{}, s.f.ClusterError("adding partitions to "+req.Topic, err)
	}
	return actionResult{Message: fmt.Sprintf("added %d partitions to %s", req.Partitions, req.Topic)}, nil
}

func (s *Server) alterConfig(ctx context.Context, req actionRequest) (actionResult, error) {
	if err := validTopicName(req.Topic); err != nil {
		return actionResult{}, err
	}
	if req.Name == "" || len(req.Name) > 255 {
		return actionResult{}, errors.New("a config name is required")
	}
	ac := kadm.AlterConfig{Op: kadm.SetConfig, Name: req.Name, Value: req.Value}
	what := fmt.Sprintf("set %s on %s", req.Name, req.Topic)
	if req.Value == nil {
		ac.Op = kadm.DeleteConfig
		what = fmt.Sprintf("removed the override of %s on %s", req.Name, req.Topic)
	}
	rs, err := s.cache.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{ac}, req.Topic)
	if err == nil {
		for _, r := range rs {
			if r.Err != nil {
				err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		return actionResult{}, s.f.ClusterError("altering the config of "+req.Topic, err)
	}
	s.cache.invalidateSlow()
	return actionResult{Message: what}, nil
}

// resetOffsets plans the new offsets of a group on one topic (or one
// partition of it); with Execute it commits them, which the coordinator only
// takes while the group has no members.
func (s *Server) resetOffsets(ctx context.Context, req actionRequest) (actionResult, error) {
	if req.Group == "" || len(req.Group) > 1024 {
		return actionResult{}, errors.New("a group is required")
	}
	if err := validTopicName(req.Topic); err != nil {
		return actionResult{}, err
	}
	spec := group.ResetSpec{Kind: req.To, Offset: req.Offset, Time: time.UnixMilli(req.Timestamp)}
	switch req.To {
	case group.ToEarliest, group.ToLatest, group.ToOffset, group.ToDatetime:
	default:
		return actionResult{}, errors.New("to must be earliest, latest, offset or datetime")
	}
	snap, err := s.cache.get(ctx)
	if err != nil {
		return actionResult{}, err
	}
	t, ok := snap.byName[req.Topic]
	if !ok {
		return actionResult{}, fmt.Errorf("no topic %q", req.Topic)
	}
	starts, err := s.cache.adm.ListStartOffsets(ctx, req.Topic)
	if err != nil {
		return actionResult{}, s.f.ClusterError("listing start offsets", err)
	}
	ends, err := s.cache.adm.ListEndOffsets(ctx, req.Topic)
	if err != nil {
		return actionResult{}, s.f.ClusterError("listing end offsets", err)
	}
	var atTime kadm.ListedOffsets
	if spec.UsesTime() {
		if atTime, err = s.cache.adm.ListOffsetsAfterMilli(ctx, req.Timestamp, req.Topic); err != nil {
			return actionResult{}, s.f.ClusterError("listing offsets by time", err)
		}
	}
	committed, err := s.cache.adm.FetchOffsets(ctx, req.Group)
	if err != nil {
		return actionResult{}, s.f.ClusterError("fetching the group's offsets", err)
	}
	plan := kadm.Offsets{}
	res := actionResult{DryRun: !req.Execute}
	for _, p := range t.Partitions {
		pn := p.Partition.Partition
		if req.Partition != nil && *req.Partition != pn {
			continue
		}
		so, sok := starts.Lookup(req.Topic, pn)
		eo, eok := ends.Lookup(req.Topic, pn)
		if !sok || !eok || so.Err != nil || eo.Err != nil {
			return actionResult{}, fmt.Errorf("partition %d: offsets unavailable", pn)
		}
		cur := int64(-1)
		if c, ok := committed.Lookup(req.Topic, pn); ok && c.Err == nil {
			cur = c.At
		}
		at := int64(-1)
		if lo, ok := atTime.Lookup(req.Topic, pn); ok && lo.Err == nil {
			at = lo.Offset
		}
		next, err := spec.Target(cur, so.Offset, eo.Offset, at)
		if err != nil {
			return actionResult{}, fmt.Errorf("partition %d: %w", pn, err)
		}
		plan.Add(kadm.Offset{Topic: req.Topic, Partition: pn, At: next, LeaderEpoch: -1})
		res.Rows = append(res.Rows, map[string]any{"topic": req.Topic, "partition": pn, "current": cur, "new": next,
			"log_start": so.Offset, "log_end": eo.Offset})
	}
	if len(res.Rows) == 0 {
		return actionResult{}, errors.New("no partition matches")
	}
	if !req.Execute {
		res.Message = fmt.Sprintf("dry run: %d partition(s) of %s would move for group %s", len(res.Rows), req.Topic, req.Group)
		return res, nil
	}
	described, err := s.cache.adm.DescribeGroups(ctx, req.Group)
	if err != nil {
		return actionResult{}, s.f.ClusterError("describing the group", err)
	}
	if d, ok := described[req.Group]; ok && d.Err == nil && d.State != "Empty" && d.State != "Dead" {
		return actionResult{}, fmt.Errorf("group %s has %d active member(s) (state %s): stop its consumers first", req.Group, len(d.Members), d.State)
	}
	cr, err := s.cache.adm.CommitOffsets(ctx, req.Group, plan)
	if err == nil {
		err = cr.Error()
	}
	if err != nil {
		return actionResult{}, s.f.ClusterError("committing offsets", err)
	}
	s.groups.forget(req.Group)
	res.Message = fmt.Sprintf("reset %d partition(s) of %s for group %s", len(res.Rows), req.Topic, req.Group)
	return res, nil
}

func (s *Server) deleteGroup(ctx context.Context, req actionRequest) (actionResult, error) {
	if req.Group == "" || len(req.Group) > 1024 {
		return actionResult{}, errors.New("a group is required")
	}
	rs, err := s.cache.adm.DeleteGroups(ctx, req.Group)
	if err == nil {
		if r, ok := rs[req.Group]; ok && r.Err != nil {
			err = r.Err
		}
	}
	if err != nil {
		if errors.Is(err, kerr.NonEmptyGroup) {
			return actionResult{}, fmt.Errorf("group %s still has members: stop its consumers first", req.Group)
		}
		return actionResult{}, s.f.ClusterError("deleting group "+req.Group, err)
	}
	s.groups.forget(req.Group)
	return actionResult{Message: "deleted group " + req.Group}, nil
}

func (s *Server) deleteRecords(ctx context.Context, req actionRequest) (actionResult, error) {
	if err := validTopicName(req.Topic); err != nil {
		return actionResult{}, err
	}
	if req.Partition == nil || *req.Partition < 0 || req.Offset < 0 {
		return actionResult{}, errors.New("a partition and an offset >= 0 are required")
	}
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: req.Topic, Partition: *req.Partition, At: req.Offset, LeaderEpoch: -1})
	rs, err := s.cache.adm.DeleteRecords(ctx, os)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		return actionResult{}, s.f.ClusterError("deleting records", err)
	}
	low := req.Offset
	if r, ok := rs.Lookup(req.Topic, *req.Partition); ok {
		low = r.LowWatermark
	}
	return actionResult{Message: fmt.Sprintf("deleted the records of %s-%d before offset %d (log start is now %d)",
		req.Topic, *req.Partition, req.Offset, low)}, nil
}
