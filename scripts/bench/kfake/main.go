// Command kfake runs franz-go's in-memory Kafka cluster (kfake) as a
// standalone server, the reference that scripts/bench/bench.sh measures ktool
// against. It prints the listen address on stdout once it serves, and runs
// until SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "port to listen on at 127.0.0.1 (0 picks a free one)")
	partitions := flag.Int("default-partitions", 1, "partitions of a topic created without a count")
	flag.Parse()
	if err := run(*port, *partitions); err != nil {
		fmt.Fprintf(os.Stderr, "kfake: %v\n", err)
		os.Exit(1)
	}
}

func run(port, partitions int) error {
	if port < 0 || port > 65535 {
		return fmt.Errorf("--port %d is not a TCP port", port)
	}
	if partitions < 1 {
		return fmt.Errorf("--default-partitions must be positive, got %d", partitions)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.DefaultNumPartitions(partitions),
	)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, addr := range c.ListenAddrs() {
		fmt.Println(addr)
	}
	<-sig
	return nil
}
