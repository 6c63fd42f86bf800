"""Currencies and their ISO 4217 minor-unit exponents; amounts are integers of minor units."""

from __future__ import annotations

# ISO 4217 active codes with a non-2 exponent, and the common 2-exponent ones hotels sell in.
_EXPONENT_0 = {"BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF"}
_EXPONENT_3 = {"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"}
_EXPONENT_2 = {
    "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT", "BGN",
    "BMD", "BND", "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF", "CHF", "CNY", "COP",
    "CRC", "CUP", "CVE", "CZK", "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP",
    "GEL", "GHS", "GIP", "GMD", "GTQ", "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IRR",
    "JMD", "KES", "KGS", "KHR", "KPW", "KYD", "KZT", "LAK", "LBP", "LKR", "LRD", "LSL", "MAD", "MDL",
    "MGA", "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MYR", "MZN", "NAD", "NGN",
    "NIO", "NOK", "NPR", "NZD", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "QAR", "RON", "RSD", "RUB",
    "SAR", "SBD", "SCR", "SDG", "SEK", "SGD", "SHP", "SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP",
    "SZL", "THB", "TJS", "TMT", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "USD", "UYU", "UZS", "VES",
    "WST", "XCD", "YER", "ZAR", "ZMW", "ZWG",
}


def currency_exponent(code: str) -> int:
    """Minor-unit exponent of an ISO 4217 code; KeyError for a code we do not sell in."""
    if code in _EXPONENT_2:
        return 2
    if code in _EXPONENT_0:
        return 0
    if code in _EXPONENT_3:
        return 3
    raise KeyError(code)


def is_known_currency(code: str) -> bool:
    try:
        currency_exponent(code)
    except KeyError:
        return False
    return True
