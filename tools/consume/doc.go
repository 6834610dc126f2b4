// Package consume implements `ktool consume`: a console consumer that prints
// records with kcat-style format strings, from an offset, a relative offset or
// a timestamp, alone or in a consumer group, for use in shell pipelines.
package consume
