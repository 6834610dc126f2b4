package plugins

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/ktoolhq/ktool/assignor"
)

func TestTranslateRoundTrip(t *testing.T) {
	secs := [][]byte{{}, []byte("a"), bytes.Repeat([]byte{0xff}, 300)}
	got, err := decodeSections(encodeSections(secs))
	if err != nil || !reflect.DeepEqual(got, secs) {
		t.Fatalf("sections: %v, %v", got, err)
	}

	members := []assignor.Member{
		{ID: "m1", InstanceID: "i1", Topics: []string{"a", "b"}, UserData: []byte{}, Owned: map[string][]int32{}, Generation: 4},
		{ID: "m2", Topics: []string{"a"}, UserData: []byte{1, 2}, Owned: map[string][]int32{"a": {-1, 0, 1 << 30}}, Generation: -1},
		{ID: "m3"},
	}
	partitions := map[string]int32{"a": 3, "b": 0}
	gm, gp, err := decodeAssignRequest(encodeAssignRequest(members, partitions))
	if err != nil || !reflect.DeepEqual(gm, members) || !reflect.DeepEqual(gp, partitions) {
		t.Fatalf("assign request:\n got %+v %v %v\nwant %+v %v", gm, gp, err, members, partitions)
	}

	a := assignor.Assignment{"m1": {"a": {0, 2}}, "m2": {}}
	ga, err := decodeAssignment(encodeAssignment(a))
	if err != nil || !reflect.DeepEqual(ga, a) {
		t.Fatalf("assignment: %v, %v", ga, err)
	}

	owned, gen, err := decodeUserDataRequest(encodeUserDataRequest(map[string][]int32{"t": {5}}, 9))
	if err != nil || gen != 9 || !reflect.DeepEqual(owned, map[string][]int32{"t": {5}}) {
		t.Fatalf("user data request: %v %d %v", owned, gen, err)
	}
}

func TestTranslateRejectsBadInput(t *testing.T) {
	good := encodeAssignRequest([]assignor.Member{{ID: "m", Topics: []string{"t"}}}, map[string]int32{"t": 1})
	for i := range good {
		if _, _, err := decodeAssignRequest(good[:i]); err == nil {
			t.Fatalf("a request cut to %d of %d bytes decoded", i, len(good))
		}
	}
	if _, _, err := decodeAssignRequest(append(good, 0)); err == nil {
		t.Fatal("trailing bytes were accepted")
	}
	// A count far larger than the message must not allocate.
	if _, err := decodeSections([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}); err == nil {
		t.Fatal("a huge count was accepted")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(encodeSections([][]byte{[]byte("x")}))
	f.Add(encodeAssignRequest([]assignor.Member{{ID: "m", Topics: []string{"t"}, Owned: map[string][]int32{"t": {0}}}}, map[string]int32{"t": 2}))
	f.Add(encodeAssignment(assignor.Assignment{"m": {"t": {0, 1}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeSections(b)
		_, _, _ = decodeAssignRequest(b)
		_, _ = decodeAssignment(b)
		_, _, _ = decodeUserDataRequest(b)
	})
}
