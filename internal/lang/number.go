package lang

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"github.com/cockroachdb/apd/v3"
)

// MaxScale is the largest number of fractional digits a Number may carry.
const MaxScale = 28

// Number is an exact decimal with the range of the platform's wire format: an
// unsigned 96-bit mantissa, a sign and a scale of 0–28 (the value is
// mantissa / 10^scale). The written scale is kept: 2.50 is not 2.5.
//
// Most numbers of a program (counts, amounts, prices) have coefficients that
// fit in an int64: they are held as that coefficient and its exponent, and
// their sums, differences, products and comparisons are computed in machine
// words. A coefficient that does not fit is held in apd's form (big), the
// general path every operation falls back to; the results are the same.
//
// The zero value is 0. Numbers are immutable; arithmetic returns new values.
type Number struct {
	c   int64        // the signed coefficient, when big is nil (never MinInt64)
	big *apd.Decimal // else the number: |coefficient| > MaxInt64; shared, never changed
	e   int32        // the exponent (-scale, -28 to 0), when big is nil
}

// exact is the context for operations that must not round.
var exact = apd.BaseContext

var (
	bigTen     = apd.NewBigInt(10)
	max96      = new(apd.BigInt).Sub(new(apd.BigInt).Lsh(apd.NewBigInt(1), 96), apd.NewBigInt(1))
	pow10Cache [2*MaxScale + 2]apd.BigInt
)

func init() {
	pow10Cache[0].SetInt64(1)
	for i := 1; i < len(pow10Cache); i++ {
		pow10Cache[i].Mul(&pow10Cache[i-1], bigTen)
	}
}

func pow10(n int) *apd.BigInt {
	if n >= 0 && n < len(pow10Cache) {
		return &pow10Cache[n]
	}
	r := new(apd.BigInt)
	r.Exp(bigTen, apd.NewBigInt(int64(n)), nil)
	return r
}

// errOverflow is returned by arithmetic whose exact result does not fit.
var errOverflow = errors.New("the result is too large for a number")

// NumberFromInt returns the integer i as a Number with scale 0.
func NumberFromInt(i int64) Number {
	if i == math.MinInt64 {
		var d apd.Decimal
		d.SetFinite(i, 0)
		return fromDec(&d)
	}
	return Number{c: i}
}

// dec returns n in apd's form, a copy the caller may change.
func (n *Number) dec() apd.Decimal {
	if n.big != nil {
		return *n.big // its coefficient is inline (fromDec): the copy shares nothing
	}
	var d apd.Decimal
	d.SetFinite(n.c, n.e)
	return d
}

// fromDec returns the Number of d, which must be finite with an exponent of
// -28 to 0 and a coefficient below 2^96.
func fromDec(d *apd.Decimal) Number {
	if d.Coeff.IsInt64() {
		c := d.Coeff.Int64()
		if d.Negative {
			c = -c
		}
		return Number{c: c, e: d.Exponent}
	}
	b := new(apd.Decimal)
	b.Set(d)
	return Number{big: b}
}

// ParseNumber reads a decimal such as "42", "-3.5", "0.10" or "1.5e3". The
// written scale is kept. It fails when the value has more than 28 fractional
// digits or does not fit in 96 bits.
func ParseNumber(s string) (Number, error) {
	if len(s) > 400 {
		return Number{}, fmt.Errorf("number %q is too long", s[:40]+"…")
	}
	d, _, err := apd.NewFromString(s)
	if err != nil || d.Form != apd.Finite {
		return Number{}, fmt.Errorf("%q is not a number", s)
	}
	if d.Exponent > 0 {
		if d.Exponent > 40 {
			return Number{}, fmt.Errorf("number %s is too large", s)
		}
		d.Coeff.Mul(&d.Coeff, pow10(int(d.Exponent)))
		d.Exponent = 0
	}
	if d.Exponent < -MaxScale {
		return Number{}, fmt.Errorf("number %s has more than %d decimal places", s, MaxScale)
	}
	if d.Coeff.CmpAbs(max96) > 0 {
		return Number{}, fmt.Errorf("number %s is too large (the mantissa must fit in 96 bits)", s)
	}
	return fromDec(d), nil
}

// MustNumber is ParseNumber for literals known to be valid; it panics otherwise.
func MustNumber(s string) Number {
	n, err := ParseNumber(s)
	if err != nil {
		panic(err)
	}
	return n
}

// Scale returns the number of fractional digits (0–28).
func (n Number) Scale() int {
	if n.big != nil {
		return int(-n.big.Exponent)
	}
	return int(-n.e)
}

// Sign returns -1, 0 or +1.
func (n Number) Sign() int {
	switch {
	case n.big != nil:
		return n.big.Sign()
	case n.c < 0:
		return -1
	case n.c > 0:
		return 1
	}
	return 0
}

// String writes the number exactly with its scale, e.g. "2.50" or "-3".
func (n Number) String() string {
	var buf [32]byte
	return string(n.appendTo(buf[:0]))
}

// appendTo appends String() to b.
func (n *Number) appendTo(b []byte) []byte {
	if n.big != nil {
		return n.big.Append(b, 'f')
	}
	return appendSmall(b, n.c, n.e)
}

// appendSmall writes c·10^e as apd's 'f' form does: every fractional digit
// of the scale, a 0 before the point of a number below 1.
func appendSmall(b []byte, c int64, e int32) []byte {
	u := uint64(c)
	if c < 0 {
		b = append(b, '-')
		u = uint64(-c)
	}
	if e == 0 {
		return strconv.AppendUint(b, u, 10)
	}
	var buf [20]byte
	digits := strconv.AppendUint(buf[:0], u, 10)
	scale := int(-e)
	if len(digits) <= scale {
		b = append(b, '0', '.')
		for i := len(digits); i < scale; i++ {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	b = append(b, digits[:len(digits)-scale]...)
	b = append(b, '.')
	return append(b, digits[len(digits)-scale:]...)
}

// reducedText is the number without the zeros that end its fraction
// ("1.50" is "1.5", "2.00" is "2"): one text for equal numbers.
func (n Number) reducedText() string {
	if n.big != nil {
		d := *n.big
		d.Reduce(&d)
		return d.Text('f')
	}
	c, e := n.c, n.e
	for e < 0 && c%10 == 0 {
		c /= 10
		e++
	}
	var buf [32]byte
	return string(appendSmall(buf[:0], c, e))
}

// Cmp compares by value (1.0 equals 1): -1, 0 or +1.
func (n Number) Cmp(o Number) int {
	if n.big == nil && o.big == nil {
		if a, b, _, ok := align(n.c, n.e, o.c, o.e); ok {
			return cmp.Compare(a, b)
		}
	}
	x, y := n.dec(), o.dec()
	return x.Cmp(&y)
}

// Int64 returns the number as an integer when it has no fractional part and fits.
func (n Number) Int64() (int64, bool) {
	if n.big == nil {
		if n.e == 0 {
			return n.c, true
		}
		if int(-n.e) >= len(pow10i) {
			return 0, n.c == 0
		}
		p := pow10i[-n.e]
		if n.c%p != 0 {
			return 0, false
		}
		return n.c / p, true
	}
	d := n.dec()
	var i apd.Decimal
	if _, err := exact.RoundToIntegralExact(&i, &d); err != nil {
		return 0, false
	}
	if i.Cmp(&d) != 0 {
		return 0, false
	}
	v, err := i.Int64()
	return v, err == nil
}

// Parts returns the wire form: the low, middle and high 32 bits of the
// mantissa and flags (bits 16–23 the scale, bit 31 the sign).
func (n Number) Parts() (lo, mid, hi, flags uint32) {
	flags = uint32(n.Scale()) << 16
	if n.Sign() < 0 {
		flags |= 1 << 31
	}
	if n.big == nil {
		u := uint64(n.c)
		if n.c < 0 {
			u = uint64(-n.c)
		}
		return uint32(u), uint32(u >> 32), 0, flags
	}
	var b big.Int
	b.Abs(n.big.Coeff.MathBigInt())
	var words [3]uint32
	for i := range words {
		var w big.Int
		w.Rsh(&b, uint(32*i))
		w.And(&w, big.NewInt(0xffffffff))
		words[i] = uint32(w.Uint64())
	}
	return words[0], words[1], words[2], flags
}

// NumberFromParts builds a Number from its wire form. It rejects a scale
// above 28 and any flag bit other than the scale (bits 16–23) and the sign
// (bit 31).
func NumberFromParts(lo, mid, hi, flags uint32) (Number, error) {
	if flags&^(0x00ff0000|0x80000000) != 0 {
		return Number{}, fmt.Errorf("number flags %#08x: only bits 16-23 (scale) and 31 (sign) may be set", flags)
	}
	scale := (flags >> 16) & 0xff
	if scale > MaxScale {
		return Number{}, fmt.Errorf("number scale %d is out of range (0-%d)", scale, MaxScale)
	}
	neg := flags&(1<<31) != 0
	if hi == 0 && mid < 1<<31 {
		c := int64(mid)<<32 | int64(lo)
		if neg {
			c = -c
		}
		return Number{c: c, e: -int32(scale)}, nil
	}
	var b big.Int
	b.SetUint64(uint64(hi))
	b.Lsh(&b, 32)
	b.Or(&b, new(big.Int).SetUint64(uint64(mid)))
	b.Lsh(&b, 32)
	b.Or(&b, new(big.Int).SetUint64(uint64(lo)))
	var d apd.Decimal
	d.Coeff.SetMathBigInt(&b)
	d.Exponent = -int32(scale)
	d.Negative = neg
	return fromDec(&d), nil
}

// finish checks that an exact result fits, rounding scales above 28 half to
// even (only products and quotients can exceed it).
func finish(d *apd.Decimal) (Number, error) {
	if d.Form != apd.Finite {
		return Number{}, errOverflow
	}
	if d.Exponent < -MaxScale {
		roundTo(d, MaxScale)
	}
	if d.Coeff.CmpAbs(max96) > 0 {
		return Number{}, errOverflow
	}
	return fromDec(d), nil
}

// roundTo rounds d half to even to at most scale fractional digits.
func roundTo(d *apd.Decimal, scale int) {
	drop := int(-d.Exponent) - scale
	if drop <= 0 {
		return
	}
	var q, r, two apd.BigInt
	var abs apd.BigInt
	abs.Abs(&d.Coeff)
	p := pow10(drop)
	q.QuoRem(&abs, p, &r)
	two.Mul(&r, apd.NewBigInt(2))
	if c := two.Cmp(p); c > 0 || (c == 0 && q.Bit(0) == 1) {
		q.Add(&q, apd.NewBigInt(1))
	}
	d.Coeff.Set(&q)
	d.Exponent = -int32(scale)
}

// roundEven returns n rounded half to even to at most scale fractional digits.
func (n Number) roundEven(scale int) Number {
	d := n.dec()
	roundTo(&d, scale)
	return fromDec(&d)
}

// Add returns n + o, with the larger scale. Overflow is an error.
func (n Number) Add(o Number) (Number, error) {
	if r, ok := addSmall(&n, &o, false); ok {
		return r, nil
	}
	x, y := n.dec(), o.dec()
	return addNum(&x, &y, y.Negative)
}

// Sub returns n - o, with the larger scale. Overflow is an error.
func (n Number) Sub(o Number) (Number, error) {
	if r, ok := addSmall(&n, &o, true); ok {
		return r, nil
	}
	x, y := n.dec(), o.dec()
	return addNum(&x, &y, !y.Negative)
}

// pow10i are the powers of ten that fit in an int64.
var pow10i = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// mulWord is a·b when it fits in an int64 other than MinInt64.
func mulWord(a, b int64) (int64, bool) {
	ua, ub := uint64(a), uint64(b)
	if a < 0 {
		ua = uint64(-a)
	}
	if b < 0 {
		ub = uint64(-b)
	}
	hi, lo := bits.Mul64(ua, ub)
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	if (a < 0) != (b < 0) {
		return -int64(lo), true
	}
	return int64(lo), true
}

// align returns the coefficients of a·10^ea and b·10^eb at the smaller of
// the two exponents, and that exponent; ok is false when one does not fit.
func align(a int64, ea int32, b int64, eb int32) (int64, int64, int32, bool) {
	switch {
	case ea == eb:
		return a, b, ea, true
	case ea > eb:
		if int(ea-eb) >= len(pow10i) {
			return a, b, eb, a == 0
		}
		x, ok := mulWord(a, pow10i[ea-eb])
		return x, b, eb, ok
	default:
		if int(eb-ea) >= len(pow10i) {
			return a, b, ea, b == 0
		}
		y, ok := mulWord(b, pow10i[eb-ea])
		return a, y, ea, ok
	}
}

// addSmall is n + o (n - o with sub) in machine words; ok is false when
// either is not in the small form or the result does not fit (the general
// path then gives it, or the overflow).
func addSmall(n, o *Number, sub bool) (Number, bool) {
	if n.big != nil || o.big != nil {
		return Number{}, false
	}
	c, e, ok := addWords(n.c, n.e, o.c, o.e, sub)
	return Number{c: c, e: e}, ok
}

// addWords is x·10^ex + y·10^ey (minus with sub) as a coefficient and an
// exponent, when it fits in an int64.
func addWords(x int64, ex int32, y int64, ey int32, sub bool) (int64, int32, bool) {
	e := ex
	if ex != ey {
		var ok bool
		if x, y, e, ok = align(x, ex, y, ey); !ok {
			return 0, 0, false
		}
	}
	if sub {
		y = -y
	}
	s := x + y
	if (x^s)&(y^s) < 0 || s == math.MinInt64 {
		return 0, 0, false
	}
	return s, e, true
}

// mulSmall is n * o in machine words (see addSmall).
func mulSmall(n, o *Number) (Number, bool) {
	if n.big != nil || o.big != nil {
		return Number{}, false
	}
	c, e, ok := mulWords(n.c, n.e, o.c, o.e)
	return Number{c: c, e: e}, ok
}

// mulWords is x·10^ex × y·10^ey (see addWords).
func mulWords(x int64, ex int32, y int64, ey int32) (int64, int32, bool) {
	e := ex + ey
	if e < -MaxScale {
		return 0, 0, false
	}
	c, ok := mulWord(x, y)
	return c, e, ok
}

// addNum returns x + y with y's sign taken as yneg. The coefficients are
// aligned to the larger scale and added exactly with apd's BigInt; going
// around apd.Context keeps its rounding checks out of the hot path.
func addNum(x, y *apd.Decimal, yneg bool) (Number, error) {
	var r apd.Decimal
	xc, yc := &x.Coeff, &y.Coeff
	var tmp apd.BigInt
	switch {
	case x.Exponent > y.Exponent:
		tmp.Mul(xc, pow10(int(x.Exponent-y.Exponent)))
		xc = &tmp
		r.Exponent = y.Exponent
	case y.Exponent > x.Exponent:
		tmp.Mul(yc, pow10(int(y.Exponent-x.Exponent)))
		yc = &tmp
		r.Exponent = x.Exponent
	default:
		r.Exponent = x.Exponent
	}
	if x.Negative == yneg {
		r.Coeff.Add(xc, yc)
		r.Negative = yneg
	} else if xc.Cmp(yc) >= 0 {
		r.Coeff.Sub(xc, yc)
		r.Negative = x.Negative
	} else {
		r.Coeff.Sub(yc, xc)
		r.Negative = yneg
	}
	return finish(&r)
}

// Mul returns n * o; the scales add (a scale above 28 is rounded half to
// even). A product with more digits than 96 bits hold is rounded half to even
// to fewer fractional digits, as a quotient is (`10 / 3 * 3` is
// 10.000000000000000000000000000); only one whose integer part does not fit
// is an overflow.
func (n Number) Mul(o Number) (Number, error) {
	if r, ok := mulSmall(&n, &o); ok {
		return r, nil
	}
	return mulGeneral(n, o)
}

func mulGeneral(n, o Number) (Number, error) {
	x, y := n.dec(), o.dec()
	var r apd.Decimal
	r.Coeff.Mul(&x.Coeff, &y.Coeff)
	r.Exponent = x.Exponent + y.Exponent
	r.Negative = x.Negative != y.Negative
	if r.Exponent < 0 && (r.Exponent < -MaxScale || r.Coeff.CmpAbs(max96) > 0) {
		// Round the exact product once, to the most fractional digits that
		// fit (rounding digit by digit would round twice).
		for k := min(int(-r.Exponent), MaxScale); k >= 0; k-- {
			var c apd.Decimal
			c.Set(&r)
			roundTo(&c, k)
			if c.Coeff.CmpAbs(max96) <= 0 {
				return finish(&c)
			}
		}
	}
	return finish(&r)
}

// ErrDivisionByZero is returned by Quo when the divisor is zero.
var ErrDivisionByZero = errors.New("division by zero")

// Quo returns n / o: the exact quotient without trailing zeros, or, when it
// does not terminate within 28 fractional digits, the quotient rounded half to
// even to 28 fractional digits (fewer when the integer part leaves no room in
// 96 bits).
func (n Number) Quo(o Number) (Number, error) {
	if o.IsZero() {
		return Number{}, ErrDivisionByZero
	}
	nd, od := n.dec(), o.dec()
	neg := nd.Negative != od.Negative
	var x, y apd.BigInt
	x.Abs(&nd.Coeff)
	y.Abs(&od.Coeff)
	sx, sy := int(-nd.Exponent), int(-od.Exponent)
	for k := MaxScale; k >= 0; k-- {
		// quotient * 10^k = x * 10^(k + sy - sx) / y
		e := k + sy - sx
		var num, den apd.BigInt
		num.Set(&x)
		den.Set(&y)
		if e >= 0 {
			num.Mul(&num, pow10(e))
		} else {
			den.Mul(&den, pow10(-e))
		}
		var q, r apd.BigInt
		q.QuoRem(&num, &den, &r)
		var d apd.Decimal
		if r.Sign() == 0 {
			// Exact: drop trailing zeros (down to scale 0). If that does not
			// fit, nothing does.
			d.Coeff.Set(&q)
			d.Exponent = -int32(k)
			d.Reduce(&d)
			if d.Exponent > 0 {
				d.Coeff.Mul(&d.Coeff, pow10(int(d.Exponent)))
				d.Exponent = 0
			}
			d.Negative = neg
			return finish(&d)
		}
		var two apd.BigInt
		two.Mul(&r, apd.NewBigInt(2))
		if c := two.Cmp(&den); c > 0 || (c == 0 && q.Bit(0) == 1) {
			q.Add(&q, apd.NewBigInt(1))
		}
		if q.CmpAbs(max96) > 0 {
			continue // fewer fractional digits, to leave room for the integer part
		}
		d.Coeff.Set(&q)
		d.Exponent = -int32(k)
		d.Negative = neg
		return finish(&d)
	}
	return Number{}, errOverflow
}

// Neg returns -n.
func (n Number) Neg() Number {
	if n.big == nil {
		return Number{c: -n.c, e: n.e}
	}
	d := n.dec()
	d.Negative = !d.Negative // not zero: a big coefficient
	return fromDec(&d)
}

// IsZero reports whether n is zero.
func (n Number) IsZero() bool { return n.big == nil && n.c == 0 }

// Round returns n rounded half away from zero (2.345 → 2.35, -2.5 → -3) to
// exactly places fractional digits (0–28): a number with fewer is padded with
// zeros (1.5 to 2 places is 1.50). Padding past 96 bits is an overflow.
func (n Number) Round(places int) (Number, error) {
	if places < 0 || places > MaxScale {
		return Number{}, fmt.Errorf("cannot round to %d decimal places (0 to %d)", places, MaxScale)
	}
	d := n.dec()
	var r apd.Decimal
	r.Negative = d.Negative
	r.Exponent = -int32(places)
	var abs apd.BigInt
	abs.Abs(&d.Coeff)
	if drop := n.Scale() - places; drop > 0 {
		var rem, twice apd.BigInt
		p := pow10(drop)
		r.Coeff.QuoRem(&abs, p, &rem)
		twice.Mul(&rem, apd.NewBigInt(2))
		if twice.Cmp(p) >= 0 {
			r.Coeff.Add(&r.Coeff, apd.NewBigInt(1))
		}
	} else {
		r.Coeff.Mul(&abs, pow10(-drop))
	}
	return finish(&r)
}
