package lang

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/cockroachdb/apd/v3"
)

// MaxScale is the largest number of fractional digits a Number may carry.
const MaxScale = 28

// Number is an exact decimal with the range of the platform's wire format: an
// unsigned 96-bit mantissa, a sign and a scale of 0–28 (the value is
// mantissa / 10^scale). The written scale is kept: 2.50 is not 2.5.
//
// The zero value is 0. Numbers are immutable; arithmetic returns new values.
type Number struct {
	d apd.Decimal // Form Finite, Exponent in [-28, 0], |Coeff| < 2^96
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
	var n Number
	n.d.SetInt64(i)
	return n
}

// ParseNumber reads a decimal such as "42", "-3.5", "0.10" or "1.5e3". The
// written scale is kept. It fails when the value has more than 28 fractional
// digits or does not fit in 96 bits.
func ParseNumber(s string) (Number, error) {
	var n Number
	if len(s) > 400 {
		return n, fmt.Errorf("number %q is too long", s[:40]+"…")
	}
	d, _, err := apd.NewFromString(s)
	if err != nil || d.Form != apd.Finite {
		return n, fmt.Errorf("%q is not a number", s)
	}
	if d.Exponent > 0 {
		if d.Exponent > 40 {
			return n, fmt.Errorf("number %s is too large", s)
		}
		d.Coeff.Mul(&d.Coeff, pow10(int(d.Exponent)))
		d.Exponent = 0
	}
	if d.Exponent < -MaxScale {
		return n, fmt.Errorf("number %s has more than %d decimal places", s, MaxScale)
	}
	n.d = *d
	if !n.fits() {
		return Number{}, fmt.Errorf("number %s is too large (the mantissa must fit in 96 bits)", s)
	}
	n.normSign()
	return n, nil
}

// MustNumber is ParseNumber for literals known to be valid; it panics otherwise.
func MustNumber(s string) Number {
	n, err := ParseNumber(s)
	if err != nil {
		panic(err)
	}
	return n
}

func (n *Number) fits() bool {
	return n.d.Form == apd.Finite && n.d.Exponent <= 0 && n.d.Exponent >= -MaxScale && n.d.Coeff.CmpAbs(max96) <= 0
}

func (n *Number) normSign() {
	if n.d.Negative && n.d.Coeff.Sign() == 0 {
		n.d.Negative = false
	}
}

// Scale returns the number of fractional digits (0–28).
func (n Number) Scale() int { return int(-n.d.Exponent) }

// Sign returns -1, 0 or +1.
func (n Number) Sign() int { return n.d.Sign() }

// String writes the number exactly with its scale, e.g. "2.50" or "-3".
func (n Number) String() string { return n.d.Text('f') }

// appendTo appends String() to b.
func (n *Number) appendTo(b []byte) []byte { return n.d.Append(b, 'f') }

// Cmp compares by value (1.0 equals 1): -1, 0 or +1.
func (n Number) Cmp(o Number) int { return n.d.Cmp(&o.d) }

// Int64 returns the number as an integer when it has no fractional part and fits.
func (n Number) Int64() (int64, bool) {
	var i apd.Decimal
	if _, err := exact.RoundToIntegralExact(&i, &n.d); err != nil {
		return 0, false
	}
	if i.Cmp(&n.d) != 0 {
		return 0, false
	}
	v, err := i.Int64()
	return v, err == nil
}

// Parts returns the wire form: the low, middle and high 32 bits of the
// mantissa and flags (bits 16–23 the scale, bit 31 the sign).
func (n Number) Parts() (lo, mid, hi, flags uint32) {
	var b big.Int
	b.Abs(n.d.Coeff.MathBigInt())
	var words [3]uint32
	for i := range words {
		var w big.Int
		w.Rsh(&b, uint(32*i))
		w.And(&w, big.NewInt(0xffffffff))
		words[i] = uint32(w.Uint64())
	}
	flags = uint32(n.Scale()) << 16
	if n.d.Negative {
		flags |= 1 << 31
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
	var b big.Int
	b.SetUint64(uint64(hi))
	b.Lsh(&b, 32)
	b.Or(&b, new(big.Int).SetUint64(uint64(mid)))
	b.Lsh(&b, 32)
	b.Or(&b, new(big.Int).SetUint64(uint64(lo)))
	var n Number
	n.d.Coeff.SetMathBigInt(&b)
	n.d.Exponent = -int32(scale)
	n.d.Negative = flags&(1<<31) != 0
	n.normSign()
	return n, nil
}

// finish checks that an exact result fits, rounding scales above 28 half to
// even (only products and quotients can exceed it).
func finish(d *apd.Decimal) (Number, error) {
	var n Number
	if d.Form != apd.Finite {
		return n, errOverflow
	}
	if d.Exponent < -MaxScale {
		roundTo(d, MaxScale)
	}
	n.d = *d
	if n.d.Coeff.CmpAbs(max96) > 0 {
		return Number{}, errOverflow
	}
	n.normSign()
	return n, nil
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

// Add returns n + o, with the larger scale. Overflow is an error.
func (n Number) Add(o Number) (Number, error) { return addNum(&n.d, &o.d, o.d.Negative) }

// Sub returns n - o, with the larger scale. Overflow is an error.
func (n Number) Sub(o Number) (Number, error) { return addNum(&n.d, &o.d, !o.d.Negative) }

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
	var r apd.Decimal
	r.Coeff.Mul(&n.d.Coeff, &o.d.Coeff)
	r.Exponent = n.d.Exponent + o.d.Exponent
	r.Negative = n.d.Negative != o.d.Negative
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
	if o.d.Coeff.Sign() == 0 {
		return Number{}, ErrDivisionByZero
	}
	neg := n.d.Negative != o.d.Negative
	var x, y apd.BigInt
	x.Abs(&n.d.Coeff)
	y.Abs(&o.d.Coeff)
	sx, sy := int(-n.d.Exponent), int(-o.d.Exponent)
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
	var r Number
	r.d.Neg(&n.d)
	r.normSign()
	return r
}

// IsZero reports whether n is zero.
func (n Number) IsZero() bool { return n.d.Coeff.Sign() == 0 }

// Round returns n rounded half away from zero (2.345 → 2.35, -2.5 → -3) to
// exactly places fractional digits (0–28): a number with fewer is padded with
// zeros (1.5 to 2 places is 1.50). Padding past 96 bits is an overflow.
func (n Number) Round(places int) (Number, error) {
	if places < 0 || places > MaxScale {
		return Number{}, fmt.Errorf("cannot round to %d decimal places (0 to %d)", places, MaxScale)
	}
	var r apd.Decimal
	r.Negative = n.d.Negative
	r.Exponent = -int32(places)
	var abs apd.BigInt
	abs.Abs(&n.d.Coeff)
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
