// Package group implements `ktool group`: list consumer groups, describe one
// with its members, committed offsets and lag, delete groups and committed
// offsets, and reset offsets the way kafka-consumer-groups.sh does (a plan by
// default, applied with --execute, refused while the group has members).
package group
