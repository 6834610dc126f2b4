package assignor

import "testing"

func TestJavaCompare(t *testing.T) {
	cases := []struct {
		a, b string
		sign int
	}{
		{"a", "b", -1},
		{"a", "a", 0},
		{"ab", "a", 1},
		{"", "a", -1},
		{"consumer-10", "consumer-9", -1},
		// U+FB01 is one UTF-16 unit, U+1F600 a surrogate pair starting
		// 0xD83D: Java orders the emoji first, UTF-8 bytes the other way.
		{"x\uFB01", "x\U0001F600", 1},
		{"\U0001F600", "\U0001F601", -1},
		{"\u00e9", "\U0001F600", -1},
		// Invalid UTF-8 still gets a total order.
		{"\xff", "\xfe", 1},
		{"\xff", "\xff", 0},
	}
	for _, c := range cases {
		got, back := javaCompare(c.a, c.b), javaCompare(c.b, c.a)
		if sign(got) != c.sign || sign(back) != -c.sign {
			t.Errorf("javaCompare(%q, %q) = %d, reversed %d, want sign %d", c.a, c.b, got, back, c.sign)
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
