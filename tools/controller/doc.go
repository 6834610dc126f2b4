// Package controller implements `ktool controller`: the active controller
// from the cluster's metadata and, with --zookeeper, the /controller and
// /controller_epoch znodes it was elected through; and `ktool controller
// resign`, which deletes /controller so the brokers elect a new controller.
package controller
