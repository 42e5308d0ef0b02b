package lang

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/cockroachdb/apd/v3"
)

// fastPathNumbers are numbers of every scale, near the limits of the small
// form (an int64 coefficient) and past them (up to 96 bits).
func fastPathNumbers() []string {
	r := rand.New(rand.NewPCG(29, 29))
	nums := []string{"0", "-0.00", "1", "-1", "0.10", "4611686018427387903", "-4611686018427387903", "2147483647", "-2147483648",
		"0.0000000000000000000000000001", "99999999999.999999999", "9223372036854775807", "-9223372036854775807",
		"9223372036854775808", "-9223372036854775808", "18446744073709551616", "79228162514264337593543950335",
		"-79228162514264337593543950335", "7.9228162514264337593543950335", "922337203685477580.7", "100", "2.50", "-0.05"}
	for range 3000 {
		c := r.Int64N(1 << 40)
		switch r.IntN(4) {
		case 0:
			c = r.Int64N(1 << 62)
		case 1:
			c = r.Int64()
		}
		s := strconv.FormatInt(c, 10)
		if r.IntN(5) == 0 {
			s += strconv.FormatInt(r.Int64N(1<<30), 10) // past an int64
		}
		if k := r.IntN(20); k > 0 && k < len(s) {
			s = s[:len(s)-k] + "." + s[len(s)-k:]
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		nums = append(nums, s)
	}
	return nums
}

// TestSmallPathMatchesGeneral: the small-decimal fast path of Add, Sub
// and Mul gives what the general path gives, digits and scale, over random
// numbers of every scale and near the fast path's limits.
func TestSmallPathMatchesGeneral(t *testing.T) {
	nums := fastPathNumbers()
	for i := 0; i < len(nums); i++ {
		a, err := ParseNumber(nums[i])
		if err != nil {
			continue // more than 96 bits
		}
		b, err := ParseNumber(nums[(i*7+3)%len(nums)])
		if err != nil {
			continue
		}
		check := func(op string, fast Number, ok bool, slow Number, err error) {
			t.Helper()
			if ok && (err != nil || fast.String() != slow.String() || fast.Sign() != slow.Sign()) {
				t.Fatalf("%s %s %s: fast %s, general %s (%v)", a, op, b, fast, slow, err)
			}
		}
		x, y := a.dec(), b.dec()
		f, ok := addSmall(&a, &b, false)
		s, err := addNum(&x, &y, y.Negative)
		check("+", f, ok, s, err)
		f, ok = addSmall(&a, &b, true)
		s, err = addNum(&x, &y, !y.Negative)
		check("-", f, ok, s, err)
		f, ok = mulSmall(&a, &b)
		s, err = mulGeneral(a, b)
		check("*", f, ok, s, err)
	}
}

// TestNumberFormsAgree: a number held in the small form reads, writes,
// compares and converts as apd's form of the same digits does.
func TestNumberFormsAgree(t *testing.T) {
	nums := fastPathNumbers()
	for i, s := range nums {
		n, err := ParseNumber(s)
		if err != nil {
			continue
		}
		d, _, err := apd.NewFromString(s)
		if err != nil {
			t.Fatal(err)
		}
		if d.IsZero() {
			d.Negative = false
		}
		if got, want := n.String(), d.Text('f'); got != want {
			t.Fatalf("%s: String %s, want %s", s, got, want)
		}
		if n.Scale() != int(-d.Exponent) || n.Sign() != d.Sign() || n.IsZero() != d.IsZero() {
			t.Fatalf("%s: scale %d sign %d zero %v", s, n.Scale(), n.Sign(), n.IsZero())
		}
		r := *d
		r.Reduce(&r)
		if got, want := n.reducedText(), r.Text('f'); got != want {
			t.Fatalf("%s: reduced %s, want %s", s, got, want)
		}
		var neg apd.Decimal
		neg.Neg(d)
		if neg.IsZero() {
			neg.Negative = false
		}
		if got, want := n.Neg().String(), neg.Text('f'); got != want {
			t.Fatalf("%s: Neg %s, want %s", s, got, want)
		}
		lo, mid, hi, flags := n.Parts()
		back, err := NumberFromParts(lo, mid, hi, flags)
		if err != nil || back.String() != n.String() || back.Cmp(n) != 0 {
			t.Fatalf("%s: parts give %s (%v)", s, back, err)
		}
		if iv, ok := n.Int64(); ok {
			if back := NumberFromInt(iv); back.Cmp(n) != 0 {
				t.Fatalf("%s: Int64 %d", s, iv)
			}
		} else if i64, err := d.Int64(); err == nil && d.Exponent >= 0 {
			t.Fatalf("%s: Int64 refused %d", s, i64)
		}
		o, err := ParseNumber(nums[(i*13+5)%len(nums)])
		if err != nil {
			continue
		}
		od := o.dec()
		nd := n.dec()
		if got, want := n.Cmp(o), nd.Cmp(&od); got != want {
			t.Fatalf("%s cmp %s: %d, want %d", n, o, got, want)
		}
	}
	if n := NumberFromInt(-9223372036854775808); n.String() != "-9223372036854775808" || n.Neg().String() != "9223372036854775808" {
		t.Fatalf("MinInt64: %s, %s", n, n.Neg())
	}
}
