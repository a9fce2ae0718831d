"""The Python email validators of tests/frameworks (README.md there), pinned and unmodified, as an
app uses them: each gets a value a reader exposed and answers what the app would store (the
validator's normalized value, or the stripped value for a yes/no validator), or None when it
refuses. `delivery` says where mail to a stored value would go, as Python's mail stack sends it.
"""

import email.utils
import encodings.idna
import unicodedata

import idna
from django import forms
from django.core.exceptions import ValidationError
from django.core.mail.message import sanitize_address
from django.core.validators import validate_email as django_validate_email
from email_validator import EmailNotValidError, validate_email
from marshmallow import Schema, fields
from pydantic import EmailStr, TypeAdapter
from wtforms import Form, StringField
from wtforms.validators import Email as WTEmail

EMAIL_STR = TypeAdapter(EmailStr)
DJANGO_FIELD = forms.EmailField()


class _Signup(Schema):
    email = fields.Email(required=True)


MARSHMALLOW = _Signup()


class _WTSignup(Form):
    email = StringField("email", [WTEmail()])


class _Data:
    """A WTForms formdata: one value for `email`."""

    def __init__(self, v):
        self.v = v

    def __iter__(self):
        return iter(["email"])

    def __contains__(self, k):
        return k == "email"

    def getlist(self, k):
        return [self.v]


def _email_validator(v):
    return validate_email(v, check_deliverability=False).normalized


def _pydantic(v):
    return EMAIL_STR.validate_python(v)


def _django_validator(v):
    # EmailValidator is a yes/no check; a ModelForm / serializer keeps the value as received.
    django_validate_email(v)
    return v


def _django_field(v):
    return DJANGO_FIELD.clean(v)


def _django_send(v):
    # What Django's mail sending puts on the wire for an address its EmailField accepted: the
    # domain through Python's IDNA 2003 codec (sanitize_address, django.core.mail).
    return sanitize_address(DJANGO_FIELD.clean(v), "utf-8")


def _wtforms(v):
    form = _WTSignup(_Data(v))
    if not form.validate():
        raise ValueError(form.errors)
    return form.email.data


def _marshmallow(v):
    return MARSHMALLOW.load({"email": v})["email"]


def _parseaddr(v):
    addr = email.utils.parseaddr(v)[1]
    if "@" not in addr:
        raise ValueError("no address")
    return addr


def _getaddresses(v):
    out = [a for _, a in email.utils.getaddresses([v]) if "@" in a]
    if not out:
        raise ValueError("no address")
    return out


VALIDATORS = {
    "email_validator.validate_email": _email_validator,
    "pydantic.EmailStr": _pydantic,
    "django.EmailValidator": _django_validator,
    "django.forms.EmailField": _django_field,
    "django.mail.sanitize_address": _django_send,
    "wtforms.Email": _wtforms,
    "marshmallow.fields.Email": _marshmallow,
    "email.utils.parseaddr": _parseaddr,
    "email.utils.getaddresses": _getaddresses,
}


def validate(values):
    """{validator: [[value, stored], ...]} for the values each validator accepted."""
    out = {name: [] for name in VALIDATORS}
    for v in values:
        for name, f in VALIDATORS.items():
            try:
                stored = f(v)
            except (ValidationError, EmailNotValidError, ValueError, TypeError, Exception):  # noqa: BLE001
                continue
            for s in stored if isinstance(stored, list) else [stored]:
                out[name].append([v, str(s)])
    return out


CUT = set(" \t\r\n<>()[]{},;:\"'\\/?#!")


def delivery(stored):
    """The domains mail to `stored` could go to: the text after its last @ (cut where an address
    ends), through Python's IDNA 2003 codec (as smtplib and Django send), UTS-46 transitional and
    nontransitional, and as is; lower-cased, trailing dots removed. Every one that any mail stack
    could use counts."""
    _, at, tail = stored.rpartition("@")
    if not at:
        return []
    parsed = email.utils.parseaddr(stored)[1].rpartition("@")[2]
    out = set()
    for raw in {tail, parsed}:
        for i, c in enumerate(raw):
            if c in CUT or unicodedata.category(c) in ("Zs", "Zl", "Zp", "Cc"):
                raw = raw[:i]
                break
        forms_ = {raw.lower()}
        for enc in (
            lambda d: d.encode("idna").decode("ascii"),
            lambda d: idna.encode(d, uts46=True, transitional=True).decode("ascii"),
            lambda d: idna.encode(d, uts46=True, transitional=False).decode("ascii"),
            lambda d: idna.encode(d, uts46=True, std3_rules=False, transitional=True).decode("ascii"),
        ):
            try:
                forms_.add(enc(raw))
            except Exception:  # noqa: BLE001 (a codec that refuses sends nothing)
                pass
        # Python's codec keeps default-ignorables it does not map; a mail stack that drops them:
        stripped = "".join(c for c in raw if unicodedata.category(c) not in ("Cf", "Mn") and c != "\u00ad")
        try:
            forms_.add(stripped.encode("idna").decode("ascii"))
        except Exception:  # noqa: BLE001
            forms_.add(stripped.lower())
        out |= {f.lower().rstrip(".") for f in forms_ if f}
    return sorted(out)
