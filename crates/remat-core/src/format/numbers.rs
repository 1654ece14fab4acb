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

/// A time in seconds.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(transparent)]
pub(super) struct Seconds(pub f64);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NumberVisitor("a number of seconds"))
            .map(Seconds)
    }
}

/// A time in the unit the caller names (rotor's layout: milliseconds).
#[derive(Clone, Copy, Debug)]
pub(super) struct TimeUnits(pub f64);

impl<'de> Deserialize<'de> for TimeUnits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NumberVisitor("a number of time units"))
            .map(TimeUnits)
    }
}

/// A rate in bytes per second.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(transparent)]
pub(super) struct Rate(pub f64);

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NumberVisitor("a number of bytes per second"))
            .map(Rate)
    }
}

/// A whole number of bytes ≥ 0. The type is unsigned, so a negative size is
/// refused where it is read.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(transparent)]
pub(super) struct Bytes(pub u64);

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct BytesVisitor;
        impl Visitor<'_> for BytesVisitor {
            type Value = u64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of bytes")
            }
            fn visit_u64<E: de::Error>(self, b: u64) -> Result<u64, E> {
                Ok(b)
            }
            fn visit_i64<E: de::Error>(self, b: i64) -> Result<u64, E> {
                u64::try_from(b).map_err(|_| E::custom(format!("must be ≥ 0, got {b}")))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<u64, E> {
                if x < 0.0 {
                    return Err(E::custom(format!("must be ≥ 0, got {x}")));
                }
                whole(x).map(|b| b as u64)
            }
        }
        d.deserialize_any(BytesVisitor).map(Bytes)
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
        struct SignedVisitor;
        impl Visitor<'_> for SignedVisitor {
            type Value = i64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of bytes")
            }
            fn visit_i64<E: de::Error>(self, b: i64) -> Result<i64, E> {
                Ok(b)
            }
            fn visit_u64<E: de::Error>(self, b: u64) -> Result<i64, E> {
                i64::try_from(b).or_else(|_| self.visit_f64(b as f64))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<i64, E> {
                whole(x).map(|b| b as i64)
            }
        }
        d.deserialize_any(SignedVisitor).map(SignedBytes)
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
