package main

import (
	"github.com/spf13/cobra"

	aclcmd "github.com/ktoolhq/ktool/tools/acl"
	"github.com/ktoolhq/ktool/tools/apiversions"
	"github.com/ktoolhq/ktool/tools/cert"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/configs"
	"github.com/ktoolhq/ktool/tools/consume"
	"github.com/ktoolhq/ktool/tools/controller"
	"github.com/ktoolhq/ktool/tools/election"
	"github.com/ktoolhq/ktool/tools/group"
	"github.com/ktoolhq/ktool/tools/logdirs"
	"github.com/ktoolhq/ktool/tools/logdump"
	"github.com/ktoolhq/ktool/tools/offsets"
	"github.com/ktoolhq/ktool/tools/perf"
	plugincmd "github.com/ktoolhq/ktool/tools/plugin"
	"github.com/ktoolhq/ktool/tools/produce"
	"github.com/ktoolhq/ktool/tools/profile"
	"github.com/ktoolhq/ktool/tools/quota"
	"github.com/ktoolhq/ktool/tools/reassign"
	"github.com/ktoolhq/ktool/tools/topic"
	"github.com/ktoolhq/ktool/tools/txn"
	"github.com/ktoolhq/ktool/tools/ui"
	"github.com/ktoolhq/ktool/tools/user"
	versioncmd "github.com/ktoolhq/ktool/tools/version"
	"github.com/ktoolhq/ktool/tools/zk"
)

func newRootCommand(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "ktool",
		Short: "Run Kafka-compatible brokers and operate any Kafka cluster",
		Long: `ktool is one binary that runs Kafka-compatible brokers (standalone or as a
ZooKeeper-coordinated cluster) and is the operator's toolbox for them and for any
Kafka cluster: topics with AR/ISR/OSR, the controller, leader elections, consumer
groups, console produce and consume, and performance tests.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	f.AddGlobalFlags(root)
	_ = root.RegisterFlagCompletionFunc("profile", cmdutil.CompleteProfiles(f))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.UsageError(err) })

	root.AddCommand(
		versioncmd.NewCommand(f),
		newBrokerCommand(f),
		perf.NewCommand(f),
		topic.NewCommand(f),
		newClusterCommand(f),
		election.NewCommand(f, nil),
		controller.NewCommand(f, nil),
		zk.NewCommand(f),
		produce.NewCommand(f, nil),
		consume.NewCommand(f, nil),
		group.NewCommand(f),
		profile.NewCommand(f),
		plugincmd.NewCommand(f),
		plugincmd.NewServeCommand(f),
		logdump.NewCommand(f),
		txn.NewCommand(f),
		offsets.NewCommand(f, nil),
		apiversions.NewCommand(f, nil),
		configs.NewCommand(f),
		user.NewCommand(f),
		quota.NewCommand(f),
		aclcmd.NewCommand(f),
		cert.NewCommand(f),
		ui.NewCommand(f, nil),
		reassign.NewCommand(f),
		logdirs.NewCommand(f),
	)
	addCompletionCommand(f, root)
	cmdutil.RequireSubcommands(root)
	return root
}
