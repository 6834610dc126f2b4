// Package produce implements `ktool produce`: a console producer that sends
// each line of standard input as one record, for use in shell pipelines.
package produce
