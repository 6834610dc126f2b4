// Package election implements `ktool elect`: preferred and unclean partition
// leader election through the ElectLeaders API, and a dry run that shows which
// partitions would change leader and each broker's leader imbalance (the
// measure behind leader.imbalance.per.broker.percentage) before and after.
package election
