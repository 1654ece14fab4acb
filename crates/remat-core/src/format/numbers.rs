//! The numbers of the file formats, read from any JSON number: times, and
//! sizes in whole bytes (`1.5e9` is accepted, `12.5` is not).
//!
//! Only what the type itself decides is checked here (a size is a whole
//! number that fits its integer); whether a value makes sense for a chain
//! (times ≥ 0, ā^ℓ ⊇ a^ℓ, …) is `Chain::validate`'s to say.

use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::Serialize;
use std::fmt;

/// Sizes written as floats from 2^62 on are refused: a few of them added up
/// must not overflow u64 (integers are read exactly and left to
/// `Chain::validate`'s sum check).
const TOO_LARGE: f64 = 4_611_686_018_427_387_904.0;

/// Any JSON number, as f64; `what` is what the field holds, for messages.
struct NumberVisitor(&'static str);

impl Visitor<'_> for NumberVisitor {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<f64, E> {
        Ok(x)
    }
    fn visit_u64<E: de::Error>(self, x: u64) -> Result<f64, E> {
        Ok(x as f64)
    }
    fn visit_i64<E: de::Error>(self, x: i64) -> Result<f64, E> {
        Ok(x as f64)
    }
}

/// A newtype over f64 read from any JSON number; `$what` names it in messages.
macro_rules! number {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Serialize)]
        #[serde(transparent)]
        pub(super) struct $name(pub f64);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(NumberVisitor($what)).map($name)
            }
        }
    };
}

number!(
    /// A time in seconds.
    Seconds,
    "a number of seconds"
);
number!(
    /// A time in the unit the caller names (rotor's layout: milliseconds).
    TimeUnits,
    "a number of time units"
);
number!(
    /// A rate in bytes per second.
    Rate,
    "a number of bytes per second"
);

/// A whole number of bytes from any JSON number; `signed`: it may be
/// negative (an overhead), else a negative size is refused where it is read.
struct BytesVisitor {
    signed: bool,
}

impl Visitor<'_> for BytesVisitor {
    type Value = i128;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number of bytes")
    }
    fn visit_u64<E: de::Error>(self, b: u64) -> Result<i128, E> {
        Ok(b.into())
    }
    fn visit_i64<E: de::Error>(self, b: i64) -> Result<i128, E> {
        if b < 0 && !self.signed {
            return Err(E::custom(format!("must be ≥ 0, got {b}")));
        }
        Ok(b.into())
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<i128, E> {
        if x < 0.0 && !self.signed {
            return Err(E::custom(format!("must be ≥ 0, got {x}")));
        }
        whole(x).map(|b| b as i128)
    }
}

/// A whole number of bytes ≥ 0.
#[derive(Clone, Copy, Debug, Default, Serialize)]
#[serde(transparent)]
pub(super) struct Bytes(pub u64);

impl Bytes {
    pub(super) fn is_zero(&self) -> bool {
        self.0 == 0
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // In 0..=u64::MAX: unsigned, and floats stop below 2^62.
        let b = d.deserialize_any(BytesVisitor { signed: false })?;
        Ok(Bytes(b as u64))
    }
}

/// A whole, possibly negative, number of bytes (a signed overhead).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub(super) struct SignedBytes(pub i64);

impl SignedBytes {
    pub(super) fn is_zero(&self) -> bool {
        self.0 == 0
    }
}

impl<'de> Deserialize<'de> for SignedBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let b = d.deserialize_any(BytesVisitor { signed: true })?;
        i64::try_from(b)
            .map(SignedBytes)
            .map_err(|_| de::Error::custom(format!("{} bytes is too large", b as f64)))
    }
}

/// `x` as a whole number of bytes small enough to add up safely.
fn whole<E: de::Error>(x: f64) -> Result<f64, E> {
    if !x.is_finite() || x.fract() != 0.0 {
        return Err(E::custom(format!(
            "must be a whole number of bytes, got {x}"
        )));
    }
    if x.abs() >= TOO_LARGE {
        return Err(E::custom(format!("{x} bytes is too large")));
    }
    Ok(x)
}

/// A tensor dimension: a whole number ≥ 0 from any JSON number (`4.0` is
/// accepted, `4.5` and `-3` are not).
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(transparent)]
pub(super) struct Dim(pub u64);

struct DimVisitor;

impl DimVisitor {
    fn refuse<E: de::Error>(x: impl fmt::Display) -> E {
        E::custom(format!("must be a whole number ≥ 0, got {x}"))
    }
}

impl Visitor<'_> for DimVisitor {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a whole number ≥ 0")
    }
    fn visit_u64<E: de::Error>(self, d: u64) -> Result<u64, E> {
        Ok(d)
    }
    fn visit_i64<E: de::Error>(self, d: i64) -> Result<u64, E> {
        u64::try_from(d).map_err(|_| Self::refuse(d))
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<u64, E> {
        // Below 2^53 a double holds every whole number exactly.
        if x >= 0.0 && x.fract() == 0.0 && x < 9_007_199_254_740_992.0 {
            Ok(x as u64)
        } else {
            Err(Self::refuse(x))
        }
    }
}

impl<'de> Deserialize<'de> for Dim {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DimVisitor).map(Dim)
    }
}
