"""The built-in secret rules: one regular expression per kind, its trigger fragments, filters.

The kinds follow what maintained secret scanners detect (gitleaks' rule set and the
detect-secrets plugins were the reference for which forms exist): provider keys with a
distinctive prefix, credentials inside URLs and headers, private key blocks, and values next
to key-like names. Each pattern replaces its whole match, or only its ``secret`` named group
so the context (a URL's host, a variable's name) stays readable.

Order matters: specific kinds run before the generic name-based rules, so a token gets its
precise kind, and a placeholder (``[REDACTED:…]``) never matches again (idempotence).
"""

import base64
import binascii
import math
import re
from collections.abc import Callable

# A value that is already a placeholder is left alone (idempotence).
_NOT_DONE = r"(?!\[REDACTED:)"
# A quote as it appears in plain text, in a JSON string (\") or in JSON nested in JSON (\\\", …).
_Q = r"(?:\\{0,7}[\"'])"
# The value of a name-based rule: no spaces, quotes, separators; a backslash only when it does
# not start an escaped quote (so ``{\"api_key\": \"v\"}`` keeps its escaping intact).
_VALUE = r"(?:[^\s\"'`,;&\\<>]|\\(?![\"'\\]))"
# Space between the words of a multi-line form, also JSON-escaped (\n, \\n) when the text is a
# JSON document held as a string.
_SP = r"(?:\s|\\+[nrt])+"
_NL = r"(?:\r?\n|(?:\\+r)?\\+n)"
# A word boundary, also right after such an escaped newline ("\nmachine …").
_B = r"(?:\b|(?<=\\[nrt]))"
# "password" in other languages: words of scripts with spaces (a word boundary before them)
# and of scripts without (密码 follows 数据库 with no space).
PASSWORD_WORDS_SPACED = ("passwort", "kennwort", "mot de passe", "contraseña", "contrasena", "senha", "palavra-passe",
                         "пароль", "wachtwoord", "lösenord", "hasło", "heslo", "jelszó", "salasana")
PASSWORD_WORDS_UNSPACED = ("密码", "密碼", "口令", "パスワード", "暗証番号", "비밀번호")


def _any_escaping(word: str) -> str:
    """A regex for ``word`` as written or with its non-ASCII letters as JSON escapes (\\u00f1)."""
    if word.isascii():
        return re.escape(word)
    # (?i) does not reach inside an escape: \u041f is П, \u043f is п — both spellings.
    escaped = {"".join(re.escape(c) if c.isascii() else r"\\+u%04x" % ord(c) for c in w)
               for w in (word, word[0].upper() + word[1:])}
    return "|".join([re.escape(word), *sorted(escaped)])


_ESCAPE_CODE = re.compile(r"u[0-9a-f]{4}$")


def _escaped_trigger(word: str) -> str:
    """A fragment every JSON-escaped spelling of ``word`` holds: its ASCII head, else the first
    letter's escape code (``u043f``)."""
    cut = next((i for i, c in enumerate(word) if not c.isascii()), len(word))
    return word[:cut] if cut >= 4 or cut == len(word) else "u%04x" % ord(word[cut])


def _escaped_triggers(word: str) -> tuple[str, ...]:
    """``_escaped_trigger`` of the word as written and capitalized (escapes keep case apart)."""
    return tuple({_escaped_trigger(word), _escaped_trigger(word[0].upper() + word[1:])})


# The options of a command line before the one that carries the password (``-h host -u app``):
# a flag and its value, never a word of prose ("redis-cli with -a only…").
_FLAGS = r"(?:\s+-{1,2}[A-Za-z][\w-]*(?:[\s=](?!-)[^\s|;&]+)?)*?"
# Names whose value is a secret whatever it looks like.
_SECRET_NAMES = (
    r"password|passwd|passphrase|pwd|(?-i:_PASS)|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|credentials?|auth[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|session[_-]?key"
)
# Fragments of names whose value is a secret only when it also looks random (entropy rule).
_KEYISH = r"key|secret|token|auth|passw|pwd|credential|creds|api|sig|salt|private|cookie|bearer"

DEFAULT_PATTERNS: dict[str, str] = {
    # BEGIN … END (PEM, OpenSSH, PGP); a block cut off before its END line goes to the end.
    "private_key": (
        r"(?s)-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)"
    ),
    # A PEM private key, base64-encoded once more (Kubernetes secrets, CI variables): the
    # header "-----BEGIN" at any of the three base64 alignments; kept unless the decoded head
    # names a PRIVATE KEY (filter below), so an encoded certificate survives.
    "base64_private_key": (
        r"(?:LS0tLS1CRUdJTi|LS0tLUJFR0lO|tLS0tQkVHSU4)(?:[A-Za-z0-9+/]|(?:\r?\n|\\n)(?=[A-Za-z0-9+/]))+={0,2}"
    ),
    # PuTTY .ppk: from "Private-Lines: N" through the key lines and their MAC, replaced whole.
    "putty_private_key": (
        r"(?i)" + _B + r"Private-Lines:\s*\d+" + _NL + r"[A-Za-z0-9+/=]+(?:" + _NL + r"(?!Private-)[A-Za-z0-9+/=]+)*"
        r"(?:" + _NL + r"Private-(?:MAC|Hash):\s*[0-9a-fA-F]+)?"
    ),
    "age_secret_key": r"\bAGE-SECRET-KEY-1[0-9A-Z]{50,}",
    "jwt": r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}",
    "aws_access_key_id": r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    "aws_secret_access_key": (
        r"(?i)aws_?secret(?:_?access)?_?key\b" + _Q + r"?\s*[:=]\s*" + _Q + r"?"
        + _NOT_DONE + r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
    ),
    "anthropic_api_key": r"\bsk-ant-[a-z0-9]+-[A-Za-z0-9_-]{20,}",
    # real keys always hold a digit; this spares slugs like sk-learn-compatible-estimators
    "openai_api_key": r"\bsk-(?!ant-)(?=[A-Za-z_-]*\d)(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_-]{20,}",
    "ai_provider_key": r"\b(?:gsk_[A-Za-z0-9]{40,}|xai-[A-Za-z0-9]{40,}|pplx-[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{30,})",
    "github_token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    "gitlab_token": r"\b(?:glpat|gldt|glrt|glptt|glsoat|glcbt|gloas|glft|glimt|glagent)-[A-Za-z0-9_-]{20,}",
    "slack_token": r"\b(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})",
    "slack_webhook": r"(?i)\bhooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9+/_-]{20,})",
    "discord_webhook": r"(?i)\bdiscord(?:app)?\.com/api/webhooks/(?P<secret>\d+/[A-Za-z0-9_-]{20,})",
    "stripe_key": r"\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}|\bwhsec_[A-Za-z0-9]{20,}",
    "google_api_key": r"\bAIza[0-9A-Za-z_-]{35}",
    # client secrets, access tokens and refresh tokens ("1//0…")
    "google_oauth": r"\bGOCSPX-[A-Za-z0-9_-]{20,}|\bya29\.[0-9A-Za-z_-]{20,}|(?<![\w/])1//0[0-9A-Za-z_-]{30,}",
    "docker_pat": r"\bdckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}",
    "atlassian_api_token": r"\bATATT3[A-Za-z0-9_=-]{60,}",
    "onepassword_token": r"\bops_eyJ[A-Za-z0-9+/_-]{100,}={0,3}",
    # user id (base64) . timestamp . HMAC, as detect-secrets' DiscordBotTokenDetector
    "discord_bot_token": r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}\b",
    "sendgrid_key": r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",
    "twilio_key": r"\bSK[0-9a-fA-F]{32}\b",
    "mailgun_key": r"\bkey-[0-9a-f]{32}\b",
    "mailchimp_key": r"\b[0-9a-f]{32}-us\d{1,2}\b",
    "npm_token": r"\bnpm_[A-Za-z0-9]{36}\b",
    "pypi_token": r"\bpypi-AgE[A-Za-z0-9_-]{50,}",
    "huggingface_token": r"\bhf_[A-Za-z0-9]{30,}\b",
    "digitalocean_token": r"\bdo[por]_v1_[a-f0-9]{64}\b",
    "shopify_token": r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",
    "telegram_bot_token": r"\b\d{8,10}:AA[A-Za-z0-9_-]{30,}",
    "vault_token": r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}",
    "terraform_token": r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}",
    "databricks_token": r"\bdapi[a-f0-9]{32}(?:-\d)?\b",
    "postman_key": r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b",
    "linear_key": r"\blin_api_[A-Za-z0-9]{40}\b",
    "doppler_token": r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}",
    "grafana_token": r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|\bglc_[A-Za-z0-9+/]{32,}={0,2}",
    "sentry_token": r"\bsntr(?:ys|yu|u|s)_[A-Za-z0-9+/=_-]{40,}",
    "square_token": r"\b(?:sq0atp|sq0csp)-[A-Za-z0-9_-]{22,}|\bEAAA[A-Za-z0-9_-]{60,}",
    "notion_token": r"\b(?:ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43})\b",
    "airtable_token": r"\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b",
    "azure_storage_key": r"(?i)\bAccountKey=(?P<secret>[A-Za-z0-9+/]{40,}={0,2})",
    # Authorization: Basic/Bearer/Token …, X-Api-Key: …, Private-Token: … (header or curl -H)
    "auth_header": (
        r"(?i)\b(?:proxy-)?(?:authorization|x-api-key|x-auth-token|private-token|x-access-token)" + _Q
        + r"?\s*[:=]\s*" + _Q + r"?(?:(?:basic|bearer|token|digest|apikey)\s+)?" + _NOT_DONE
        + r"(?P<secret>[A-Za-z0-9._~+/=-]{8,})"
    ),
    "bearer_token": r"(?i)\bbearer\s+" + _NOT_DONE + r"(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)",
    # Passwords on a command line, where the flag, not a name, says what the value is.
    "mysql_password": (  # -pPASSWORD (no space: a lone -p prompts, the next word is the database)
        r"(?i)\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb(?:-dump)?)" + _FLAGS
        + r"\s+-p" + _Q + r"?" + _NOT_DONE + r"(?P<secret>[^\s\"'`;&|\\]+)"
    ),
    "sshpass_password": r"\bsshpass\s+(?:-[a-zA-Z]\s+\S+\s+)*-p\s*" + _Q + r"?" + _NOT_DONE + r"(?P<secret>[^\s\"'`\\]+)",
    "redis_cli_password": (
        r"\bredis-cli" + _FLAGS + r"\s+(?:-a|--pass)(?:\s+|=)" + _Q + r"?" + _NOT_DONE + r"(?P<secret>[^\s\"'`\\]+)"
    ),
    "openssl_passphrase": r"(?i)-pass(?:in|out)?\s+pass:" + _NOT_DONE + r"(?P<secret>[^\s\"'`\\]+)",
    # ~/.netrc: machine HOST login USER password PASS (on one line or several)
    "netrc_password": (
        _B + r"(?:machine" + _SP + r"\S+?" + _SP + r"|default" + _SP + r")login" + _SP + r"\S+?(?:" + _SP
        + r"account" + _SP + r"\S+?)?" + _SP + r"password" + _SP + _Q + r"?" + _NOT_DONE + r"(?P<secret>[^\s\"'`\\]+)"
    ),
    # ~/.pgpass: hostname:port:database:username:password (the host holds a letter, dot or *)
    "pgpass_line": (
        r"(?:(?<=\\[nrt])|(?<![\w.*:$@/\\-]))(?=[^:\s]*[A-Za-z.*])[A-Za-z0-9_.*-]+:(?:\d{2,5}|\*):[A-Za-z0-9_.*$-]+"
        r":[A-Za-z0-9_.*@$-]+:" + _NOT_DONE + r"(?P<secret>[^\s:\"'`\\()\[\]{},;]{4,})(?=[\s\"'`\\)\]},;]|$)"
    ),
    # "password" in other languages followed by a colon (also the full-width one) or "="
    # "password" in other languages followed by a colon (also the full-width one) or "="; the
    # words also as JSON's \uXXXX escapes (a tool's json.dumps output kept in a message).
    "password_word": (
        r"(?i)(?:(?<![\w-])(?:" + "|".join(_any_escaping(w) for w in PASSWORD_WORDS_SPACED) + r")|"
        + "|".join(_any_escaping(w) for w in PASSWORD_WORDS_UNSPACED) + r")"
        # up to three words may qualify it on the same line ("Kennwort für das NAS: …")
        r"(?:[ \t]+[^\s:=：,;.?!]{1,24}){0,3}?[ \t]*(?:[:=：]|\\+uff1a)\s*" + _Q + r"?" + _NOT_DONE
        + r"(?P<secret>[^\s\"'`,;，。、\\]{4,})"
    ),
    # curl -u user:pass, --user user:pass
    "cli_credentials": r"(?:\s|^)(?:-u|--user)[\s=]+[\"']?[^\s:\"']+:" + _NOT_DONE + r"(?P<secret>[^\s\"']+)",
    # scheme://user:pass@host (also JSON-escaped, https:\/\/…) → only pass goes; the user may be empty (redis://:pw@host) and
    # the password may hold '/' or '@' (the host is what follows the last '@').
    "url_password": (
        r"\b[a-zA-Z][a-zA-Z0-9+.-]*:(?:\\{0,7}/){2}[^\s:/@\"'<>\\]*:" + _NOT_DONE
        + r"(?P<secret>[^\s\"'<>\\]+?)(?=@[^\s@/\"'<>\\]*(?:[/\s?#\"'<>\\]|$))"
    ),
    # URL signatures of pre-signed links (S3, GCS, Azure SAS).
    "url_signature": (
        r"(?i)[?&](?:sig|signature|x-amz-signature|x-goog-signature|x-amz-security-token|x-amz-credential)="
        + _NOT_DONE + r"(?P<secret>[^\s&#\"'<>\\]{8,})"
    ),
    # password=…, DB_PASSWORD: …, REDIS_PASS=…, "api_key": "…", {\"api_key\": \"…\"},
    # PHP/Ruby 'password' => '…', os.environ["X_PASSWORD"] = "…" — the value only;
    # values that are only digits (and dots) are usually settings (max_token=4096), not secrets.
    "assignment": (
        r"(?im)(?:\b[A-Za-z0-9_]*(?:" + _SECRET_NAMES + r")\b" + _Q + r"?\]?\s*(?:=>?|:(?=\s*" + _Q + r")|(?<=[\"']):)"
        r"|^\s*[A-Za-z0-9_]*(?:" + _SECRET_NAMES + r")\s*:)"
        r"\s*" + _Q + r"?" + _NOT_DONE + r"(?![\d.]+(?:[\s\"',;&\\]|$))(?P<secret>" + _VALUE + r"{4,})"
    ),
    # A long random-looking value next to a key-like name (MY_SECRET_VALUE=…, signingKeyId: …);
    # kept only when it passes the entropy filter below, so `tokenizer = bert-base` survives.
    "keyed_high_entropy": (
        r"(?i)\b[A-Za-z0-9_.-]{0,30}?(?:" + _KEYISH + r")[A-Za-z0-9_.-]{0,30}" + _Q + r"?\s*(?:=|:|=>)\s*"
        + _Q + r"?" + _NOT_DONE + r"(?P<secret>[A-Za-z0-9+/=_.~-]{16,})"
    ),
}

# Lower-case fragments at least one of which every match of a built-in pattern contains. A
# text holding none of them skips that regex: most messages hold no secret, and a substring
# test is far cheaper than a regex scan. User patterns have no triggers and always run.
TRIGGERS: dict[str, tuple[str, ...]] = {
    "private_key": ("-----begin",),
    "base64_private_key": ("ls0tls1crudjti", "ls0tlujfr0lo", "tls0tqkvhsu4"),
    "putty_private_key": ("private-lines:",),
    "age_secret_key": ("age-secret-key-",),
    "jwt": ("eyj",),
    "aws_access_key_id": ("akia", "asia", "a3t", "abia", "acca"),
    "aws_secret_access_key": ("secret",),
    "anthropic_api_key": ("sk-ant-",),
    "openai_api_key": ("sk-",),
    "ai_provider_key": ("gsk_", "xai-", "pplx-", "r8_"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": ("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-", "gloas-", "glft-", "glimt-",
                     "glagent-"),
    "slack_token": ("xox", "xapp-"),
    "slack_webhook": ("hooks.slack.com",),
    "discord_webhook": ("/api/webhooks/",),
    "stripe_key": ("sk_", "rk_", "whsec_"),
    "google_api_key": ("aiza",),
    "google_oauth": ("gocspx-", "ya29.", "1//0"),
    "docker_pat": ("dckr_pat_", "dckr_oat_"),
    "atlassian_api_token": ("atatt3",),
    "onepassword_token": ("ops_eyj",),
    "discord_bot_token": (),  # no fixed fragment: runs on every text past the gate
    "sendgrid_key": ("sg.",),
    "twilio_key": ("sk",),
    "mailgun_key": ("key-",),
    "mailchimp_key": ("-us",),
    "npm_token": ("npm_",),
    "pypi_token": ("pypi-",),
    "huggingface_token": ("hf_",),
    "digitalocean_token": ("_v1_",),
    "shopify_token": ("shpat_", "shpca_", "shppa_", "shpss_"),
    "telegram_bot_token": (":aa",),
    "vault_token": ("hvs.", "hvb.", "hvr."),
    "terraform_token": (".atlasv1.",),
    "databricks_token": ("dapi",),
    "postman_key": ("pmak-",),
    "linear_key": ("lin_api_",),
    "doppler_token": ("dp.",),
    "grafana_token": ("glsa_", "glc_"),
    "sentry_token": ("sntr",),
    "square_token": ("sq0atp-", "sq0csp-", "eaaa"),
    "notion_token": ("ntn_", "secret_"),
    "airtable_token": ("pat",),
    "azure_storage_key": ("accountkey=",),
    "auth_header": ("authorization", "x-api-key", "x-auth-token", "private-token", "x-access-token"),
    "bearer_token": ("bearer",),
    "mysql_password": ("mysql", "mariadb"),
    "sshpass_password": ("sshpass",),
    "redis_cli_password": ("redis-cli",),
    "openssl_passphrase": ("pass:",),
    "netrc_password": ("password",),
    # the port field: ":5432:" or ":*:" (a cheap test before the costly line pattern)
    "pgpass_line": (":0", ":1", ":2", ":3", ":4", ":5", ":6", ":7", ":8", ":9", ":*:"),
    "password_word": tuple(sorted({t for w in PASSWORD_WORDS_SPACED + PASSWORD_WORDS_UNSPACED
                                   for t in (w, *_escaped_triggers(w))})),
    "cli_credentials": ("-u", "--user"),
    "url_password": ("://", ":\\"),
    "url_signature": ("sig", "x-amz-", "x-goog-"),
    "assignment": ("pass", "pwd", "secret", "token", "apikey", "api_key", "api-key", "accesskey", "access_key",
                   "access-key", "private_key", "private-key", "privatekey", "credential", "auth_key", "auth-key",
                   "authkey", "signing", "encryption", "master", "session"),
    "keyed_high_entropy": ("key", "secret", "token", "auth", "passw", "pwd", "credential", "creds", "api",
                           "sig", "salt", "private", "cookie", "bearer"),
}

# The cheap gate that lets most messages skip every rule: a built-in rule can only match a
# text that holds 15+ characters without a space (every vendor key, JWT, key body and random
# value is such a run) or one of these lower-case fragments (the names and markers of the
# rules whose secret can be shorter: password=…, Authorization: Basic …, curl -u a:b, URLs).
# A few substring tests and one split instead of a test per trigger: redaction must cost
# little next to parsing (bench/ingest.py).
GATE_FRAGMENTS: tuple[str, ...] = ("pass", "pwd", "secret", "token", "key", "auth", "cred", "-----begin", "://",
                                   "-u", "sig=", ":\\", "mysql", "mariadb", "redis-cli", "private-lines",
                                   *(t for t in TRIGGERS["password_word"] if t.isascii() and not _ESCAPE_CODE.match(t)
                                     and "pass" not in t and t != "contrasena"))
# Checked only when the text holds non-ASCII letters, or JSON's \u escapes: most text holds
# neither, and each fragment tested costs a scan of the text.
GATE_UNICODE: tuple[str, ...] = tuple(t for t in TRIGGERS["password_word"] if not t.isascii())
GATE_ESCAPED: tuple[str, ...] = tuple(t for t in TRIGGERS["password_word"] if _ESCAPE_CODE.match(t))
LONG_RUN = 15

# Past the gate, one scan finds which triggers a text holds (at each position the longest
# trigger starting there; the shorter triggers it begins with are implied), so only the rules
# whose triggers are present run.
_ALL = sorted({t for ts in TRIGGERS.values() for t in ts}, key=len, reverse=True)
# Rules with no trigger run on every text that passes the gate.
ALWAYS: frozenset[str] = frozenset(name for name, ts in TRIGGERS.items() if not ts)

def _by_first_char(words: list[str]) -> str:
    """An alternation grouped by first character (``s(?:k-ant-|ecret|…)``): the regex engine
    then rejects most positions on one character instead of trying every trigger there."""
    groups: dict[str, list[str]] = {}
    for word in words:  # longest first within each group, as in ``words``
        groups.setdefault(word[0], []).append(word[1:])
    return "|".join(re.escape(c) + "(?:" + "|".join(map(re.escape, rest)) + ")" for c, rest in groups.items())


TRIGGER_SCAN = re.compile("(?=(" + _by_first_char(_ALL) + "))")
IMPLIED: dict[str, frozenset[str]] = {s: frozenset(t for t in _ALL if s.startswith(t)) for s in _ALL}
RULES_BY_TRIGGER: dict[str, tuple[str, ...]] = {
    t: tuple(name for name, ts in TRIGGERS.items() if t in ts) for t in _ALL
}


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value`` (0 for an empty string)."""
    if not value:
        return 0.0
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_random(value: str) -> bool:
    """True for a token that reads like generated key material, not a word, path or version.

    detect-secrets' high-entropy plugins flag base64 above 4.5 bits and hex above 3 bits per
    character on any string; next to a key-like name the bar can be lower (3.5), but the value
    must mix digits with letters (a hyphenated word list or a model name does not).
    """
    core = value.strip("=")
    if len(core) < 16 or "[REDACTED:" in core:
        return False
    has_digit = any(c.isdigit() for c in core)
    has_alpha = any(c.isalpha() for c in core)
    if not (has_digit and has_alpha):
        return False
    if re.fullmatch(r"[0-9a-fA-F]+", core):  # hex: a hash or an id; 32+ of them read as a key
        return len(core) >= 32 and shannon_entropy(core) >= 3.0
    return shannon_entropy(core) >= 3.5


def encodes_private_key(value: str) -> bool:
    """True when base64 ``value`` decodes to a PEM header naming a private key (not a certificate)."""
    compact = re.sub(r"\\n|\s", "", value)
    for skip in range(3):  # the header may sit at any of the three base64 alignments
        head = compact[:120]
        try:
            decoded = base64.b64decode(head[: len(head) // 4 * 4], validate=False)
        except (ValueError, binascii.Error):
            decoded = b""
        if b"PRIVATE KEY" in decoded:
            return True
        compact = "A" + compact  # realign: one more leading base64 digit
    return False


# Kinds whose match is kept unless its secret part passes this test.
FILTERS: dict[str, Callable[[str], bool]] = {"keyed_high_entropy": looks_random,
                                             "base64_private_key": encodes_private_key,
                                             # a dotted identifier of the same shape is not random
                                             "discord_bot_token": lambda v: looks_random(v.replace(".", ""))}
