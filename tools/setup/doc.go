// Package setup defines a local cluster (Spec, kept in DIR/cluster.yaml,
// with one server.properties per broker) and implements `ktool cluster
// init`, the wizard that asks for it, validates each answer and writes the
// files that `ktool cluster up` reads.
package setup
