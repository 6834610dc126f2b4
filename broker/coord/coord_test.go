package coord

import (
	"errors"
	"testing"
)

func TestValidatePath(t *testing.T) {
	for _, tc := range []struct {
		path       string
		sequential bool
		ok         bool
	}{
		{"/", false, true},
		{"/a", false, true},
		{"/a/b-c.d", false, true},
		{"", false, false},
		{"a", false, false},
		{"/a/", false, false},
		{"/a/", true, true},
		{"/a//b", false, false},
		{"/a/./b", false, false},
		{"/a/..", false, false},
		{"/a\x00b", false, false},
	} {
		err := ValidatePath(tc.path, tc.sequential)
		if (err == nil) != tc.ok {
			t.Errorf("ValidatePath(%q, %v) = %v", tc.path, tc.sequential, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidPath) {
			t.Errorf("ValidatePath(%q) error %v is not ErrInvalidPath", tc.path, err)
		}
	}
}

func TestParentJoin(t *testing.T) {
	for path, want := range map[string]string{"/a": "/", "/a/b": "/a", "/a/b/c": "/a/b", "/": "/"} {
		if got := Parent(path); got != want {
			t.Errorf("Parent(%q) = %q, want %q", path, got, want)
		}
	}
	if Join("/", "a") != "/a" || Join("/a", "b") != "/a/b" {
		t.Error("Join")
	}
	if SequenceSuffix(42) != "0000000042" {
		t.Error(SequenceSuffix(42))
	}
}

func TestMultiErrorUnwraps(t *testing.T) {
	err := error(&MultiError{Index: 2, Op: SetOp("/x", nil, 3), Err: ErrBadVersion})
	if !errors.Is(err, ErrBadVersion) || err.Error() != "multi op 2 (set /x): coord: version conflict" {
		t.Fatal(err)
	}
}
