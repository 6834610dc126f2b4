package protocol

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
)

func TestReadFrameLargeGrowsAsDataArrives(t *testing.T) {
	body := make([]byte, 3*eagerFrame+17)
	for i := range body {
		body[i] = byte(i)
	}
	var in bytes.Buffer
	binary.Write(&in, binary.BigEndian, int32(len(body)))
	in.Write(body)
	got, err := ReadFrame(&in, 100<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Fatal("large frame read back differently")
	}
	// A large frame cut short is an error, not a partial frame.
	in.Reset()
	binary.Write(&in, binary.BigEndian, int32(len(body)))
	in.Write(body[:eagerFrame+5])
	if _, err := ReadFrame(&in, 100<<20); err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated large frame: %v", err)
	}
}
