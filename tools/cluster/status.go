package cluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/internal/supervisor/control"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Status is the report of `ktool cluster status` (and of `up`).
type Status struct {
	Dir       string `json:"dir" yaml:"dir"`
	Mode      string `json:"mode" yaml:"mode"`
	ZooKeeper string `json:"zookeeper,omitempty" yaml:"zookeeper,omitempty"`
	// ZooKeeperPID is set when the cluster started ZooKeeper itself.
	ZooKeeperPID     int  `json:"zookeeper_pid,omitempty" yaml:"zookeeper_pid,omitempty"`
	ZooKeeperRunning bool `json:"zookeeper_running,omitempty" yaml:"zookeeper_running,omitempty"`
	// ZooKeeperNodes are the nodes of the ensemble the cluster started.
	ZooKeeperNodes    []ZooKeeperNode `json:"zookeeper_nodes,omitempty" yaml:"zookeeper_nodes,omitempty"`
	SupervisorPID     int             `json:"supervisor_pid,omitempty" yaml:"supervisor_pid,omitempty"`
	SupervisorRunning bool            `json:"supervisor_running,omitempty" yaml:"supervisor_running,omitempty"`
	// ClusterID and Controller come from the brokers' metadata; Controller
	// is -1 when no broker answered or none is elected.
	ClusterID  string         `json:"cluster_id,omitempty" yaml:"cluster_id,omitempty"`
	Controller int32          `json:"controller" yaml:"controller"`
	Brokers    []BrokerStatus `json:"brokers" yaml:"brokers"`
}

// ZooKeeperNode is one node of a local ensemble in a Status.
type ZooKeeperNode struct {
	ID      int  `json:"id" yaml:"id"`
	PID     int  `json:"pid" yaml:"pid"`
	Running bool `json:"running" yaml:"running"`
}

// BrokerStatus is one broker in a Status.
type BrokerStatus struct {
	ID          int32  `json:"id" yaml:"id"`
	Addr        string `json:"addr" yaml:"addr"`
	MetricsAddr string `json:"metrics_addr,omitempty" yaml:"metrics_addr,omitempty"`
	PID         int    `json:"pid,omitempty" yaml:"pid,omitempty"`
	Running     bool   `json:"running" yaml:"running"`
	Registered  bool   `json:"registered" yaml:"registered"`
	Controller  bool   `json:"controller" yaml:"controller"`
	Log         string `json:"log" yaml:"log"`
}

// StatusOptions are the inputs of `ktool cluster status`.
type StatusOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag
	Dir     string
}

// NewStatusCommand returns `ktool cluster status`.
func NewStatusCommand(f *cmdutil.Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the processes and brokers of the local cluster",
		Long: `Show each broker of the local cluster in --dir: whether its process runs
(in the embedded mode: whether the supervisor runs it), whether it is
registered, and which broker is the controller.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runStatus(cmd.Context(), opts)
		},
	}
	addDirFlag(cmd, &opts.Dir)
	opts.Output.Register(cmd)
	return cmd
}

func addDirFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVar(dir, "dir", DefaultDir(), "cluster directory (env KTOOL_CLUSTER_DIR)")
	_ = cmd.MarkFlagDirname("dir")
}

func runStatus(ctx context.Context, o *StatusOptions) error {
	st, err := LoadState(o.Dir)
	if err != nil {
		return err
	}
	var supervised []control.BrokerState
	if st.Mode == ModeEmbedded && st.Supervisor.Alive() {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := control.Call(cctx, st.Socket, control.Request{Op: control.OpStatus})
		cancel()
		if err != nil {
			return err
		}
		supervised = resp.Brokers
	}
	reg := registration{Controller: -1}
	if st.Running() {
		if r, err := readRegistration(ctx, o.Factory, st.Addrs(), 3*time.Second, st.clientOpts(o.Factory)); err == nil {
			reg = r
		}
	}
	s := buildStatus(st, reg, supervised)
	w := o.Factory.IO.Out
	return o.Output.Print(w, s, func() error { return writeStatus(w, s) })
}

// buildStatus joins the recorded processes with what the supervisor and the
// metadata say. supervised is nil when the embedded-mode broker states are
// not known: every broker is then taken as running when the supervisor is.
func buildStatus(st *State, reg registration, supervised []control.BrokerState) Status {
	s := Status{Dir: st.Dir, Mode: st.Mode, ZooKeeper: st.ZooKeeper, ClusterID: reg.ClusterID, Controller: reg.Controller, Brokers: []BrokerStatus{}}
	if p := st.ZooKeeperProcess; p != nil {
		s.ZooKeeperPID, s.ZooKeeperRunning = p.PID, p.Alive()
	}
	for i, p := range st.ZooKeeperEnsemble {
		s.ZooKeeperNodes = append(s.ZooKeeperNodes, ZooKeeperNode{ID: i + 1, PID: p.PID, Running: p.Alive()})
	}
	supAlive := st.Supervisor.Alive()
	if st.Supervisor != nil {
		s.SupervisorPID, s.SupervisorRunning = st.Supervisor.PID, supAlive
	}
	for _, b := range st.Brokers {
		bs := BrokerStatus{ID: b.ID, Addr: b.Addr, MetricsAddr: b.MetricsAddr, Log: b.Log,
			Registered: slices.Contains(reg.Brokers, b.ID), Controller: reg.Controller == b.ID}
		switch st.Mode {
		case ModeEmbedded:
			if supAlive {
				bs.PID, bs.Running = st.Supervisor.PID, supervised == nil
				for _, sb := range supervised {
					if sb.ID == b.ID {
						bs.Running = sb.Running
					}
				}
			}
		default:
			if b.Process.Alive() {
				bs.PID, bs.Running = b.Process.PID, true
			}
		}
		s.Brokers = append(s.Brokers, bs)
	}
	return s
}

func writeStatus(w io.Writer, s Status) error {
	switch s.Mode {
	case ModeEmbedded:
		sup := "not running"
		if s.SupervisorRunning {
			sup = fmt.Sprintf("pid %d", s.SupervisorPID)
		}
		fmt.Fprintf(w, "Cluster in %s: embedded coordination store, supervisor %s\n", s.Dir, sup)
	default:
		zk := s.ZooKeeper
		if s.ZooKeeperPID != 0 {
			state := "stopped"
			if s.ZooKeeperRunning {
				state = fmt.Sprintf("pid %d", s.ZooKeeperPID)
			}
			zk += " (started by the cluster, " + state + ")"
		}
		if len(s.ZooKeeperNodes) > 0 {
			var nodes []string
			for _, n := range s.ZooKeeperNodes {
				state := "stopped"
				if n.Running {
					state = fmt.Sprintf("pid %d", n.PID)
				}
				nodes = append(nodes, fmt.Sprintf("node %d %s", n.ID, state))
			}
			zk += fmt.Sprintf(" (an ensemble of %d started by the cluster: %s)", len(s.ZooKeeperNodes), strings.Join(nodes, ", "))
		}
		fmt.Fprintf(w, "Cluster in %s: ZooKeeper %s\n", s.Dir, zk)
	}
	controller := "none"
	if s.Controller >= 0 {
		controller = fmt.Sprint(s.Controller)
	}
	if s.ClusterID != "" {
		fmt.Fprintf(w, "Cluster id %s, controller %s\n", s.ClusterID, controller)
	} else {
		fmt.Fprintf(w, "No broker answered\n")
	}
	tbl := cmdutil.NewTable(w, "Broker", "Address", "Process", "Registered", "Role")
	for _, b := range s.Brokers {
		proc := "stopped"
		if b.Running {
			proc = fmt.Sprintf("pid %d", b.PID)
		}
		role := ""
		if b.Controller {
			role = "controller"
		}
		if err := tbl.Append([]string{fmt.Sprint(b.ID), b.Addr, proc, yesNo(b.Registered), role}); err != nil {
			return err
		}
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	if len(s.Brokers) > 0 {
		fmt.Fprintf(w, "Logs: %s (and the other brokers' dirs)\n", s.Brokers[0].Log)
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
