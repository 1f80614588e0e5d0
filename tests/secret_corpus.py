"""A corpus of planted secret forms, shared by the redaction unit tests and the end-to-end leak test.

Every value is made up, built from pieces so that no file holds a ready-made credential. Each
form is ``(kind, text, needle)``: the kind redaction must report, a realistic text holding the
secret, and the secret part that must never be stored (checked byte for byte).
"""

import random
from typing import NamedTuple

_RNG = random.Random(1307)
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _rand(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _hex(n: int) -> str:
    return _rand(n, "0123456789abcdef")


class Form(NamedTuple):
    kind: str
    text: str
    needle: str


def _form(kind: str, template: str, needle: str) -> Form:
    return Form(kind, template.replace("{S}", needle), needle)


_PEM_BODY = "\n".join(_rand(64, _ALNUM + "+/") for _ in range(4))
_PGP_BODY = "\n".join(_rand(64, _ALNUM + "+/") for _ in range(3))
_AWS_SECRET = "89//" + _rand(36, _ALNUM + "/+")
_SLACK_PATH = f"T{_rand(8).upper()}/B{_rand(8).upper()}/{_rand(24)}"

FORMS: list[Form] = [
    Form("private_key", "key:\n-----BEGIN RSA PRIVATE KEY-----\n" + _PEM_BODY + "\n-----END RSA PRIVATE KEY-----\nafter",
         _PEM_BODY.splitlines()[1]),
    Form("private_key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + _PGP_BODY + "\n-----END PGP PRIVATE KEY BLOCK-----",
         _PGP_BODY.splitlines()[1]),
    _form("age_secret_key", "age identity {S} saved", "AGE-SECRET-KEY-1" + _rand(58, "ACDEFGHJKLMNPQRSTUVWXYZ0123456789")),
    _form("jwt", "Cookie: session={S}", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOi" + _rand(20) + "." + _rand(43)),
    _form("aws_access_key_id", "key {S} here", "AKIA" + _rand(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")),
    _form("aws_secret_access_key", "aws_secret_access_key = {S}", "wJalr" + _rand(35, _ALNUM + "/+")),
    _form("assignment", '"SecretAccessKey": "{S}"', _AWS_SECRET),
    _form("anthropic_api_key", "export ANTHROPIC_API_KEY={S}", "sk-ant-api03-" + _rand(90, _ALNUM + "_-") + "AA"),
    _form("openai_api_key", "use {S} ok", "sk-proj-" + _rand(40)),
    _form("ai_provider_key", "GROQ key {S}", "gsk_" + _rand(52)),
    _form("github_token", "push with {S}", "ghp_" + _rand(36)),
    _form("github_token", "fine-grained {S} token", "github_pat_11" + _rand(20, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") + "_" + _rand(59)),
    _form("gitlab_token", "clone with {S}", "glpat-" + _rand(20)),
    _form("slack_token", "bot {S}", "xoxb-" + _rand(12, "0123456789") + "-" + _rand(24)),
    _form("slack_webhook", "post to https://hooks.slack.com/services/{S} daily", _SLACK_PATH),
    _form("discord_webhook", "hook https://discord.com/api/webhooks/{S}", _rand(18, "0123456789") + "/" + _rand(68, _ALNUM + "_-")),
    _form("stripe_key", "stripe {S} live", "sk_live_" + _rand(24)),
    _form("stripe_key", "restricted {S}", "rk_live_" + _rand(24)),
    _form("google_api_key", "maps key {S} end", "AIza" + _rand(35, _ALNUM + "_-")),
    _form("google_oauth", "client secret {S}", "GOCSPX-" + _rand(28, _ALNUM + "_-")),
    _form("sendgrid_key", "mail {S}", "SG." + _rand(22, _ALNUM + "_-") + "." + _rand(43, _ALNUM + "_-")),
    _form("twilio_key", "twilio {S}", "SK" + _hex(32)),
    _form("mailgun_key", "mailgun {S}", "key-" + _hex(32)),
    _form("mailchimp_key", "chimp {S}", _hex(32) + "-us14"),
    _form("npm_token", "npm {S}", "npm_" + _rand(36)),
    _form("pypi_token", "upload with {S}", "pypi-AgEIcHlwaS5vcmc" + _rand(60, _ALNUM + "_-")),
    _form("huggingface_token", "hub {S}", "hf_" + _rand(34)),
    _form("digitalocean_token", "doctl {S}", "dop_v1_" + _hex(64)),
    _form("shopify_token", "shop {S}", "shpat_" + _hex(32)),
    _form("telegram_bot_token", "bot {S}", _rand(10, "0123456789") + ":AA" + _rand(33, _ALNUM + "_-")),
    _form("vault_token", "VAULT {S}", "hvs." + _rand(24)),
    _form("terraform_token", "tfc {S}", _rand(14).lower() + ".atlasv1." + _rand(67)),
    _form("databricks_token", "dbx {S}", "dapi" + _hex(32)),
    _form("postman_key", "postman {S}", "PMAK-" + _hex(24) + "-" + _hex(34)),
    _form("linear_key", "linear {S}", "lin_api_" + _rand(40)),
    _form("doppler_token", "doppler {S}", "dp.pt." + _rand(43)),
    _form("grafana_token", "grafana {S}", "glsa_" + _rand(32) + "_" + _hex(8)),
    _form("sentry_token", "sentry {S}", "sntrys_" + _rand(60)),
    _form("square_token", "square {S}", "sq0atp-" + _rand(22, _ALNUM + "_-")),
    _form("notion_token", "notion {S}", "ntn_" + _rand(46)),
    _form("airtable_token", "airtable {S}", "pat" + _rand(14) + "." + _hex(64)),
    _form("azure_storage_key", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={S};EndpointSuffix=core",
          _rand(86, _ALNUM + "+/") + "=="),
    _form("auth_header", "Authorization: Basic {S}", _rand(28, _ALNUM + "+/") + "=="),
    _form("auth_header", "curl -H 'X-Api-Key: {S}' https://api", _rand(32)),
    _form("bearer_token", "sent Bearer {S} along", _rand(40)),
    _form("cli_credentials", "curl -u admin:{S} https://x", "Sup3r" + _rand(12)),
    _form("url_password", "postgres://admin:{S}@db:5432/app", "s3cret" + _rand(8)),
    _form("url_password", "redis://:{S}@cache:6379/0", "r3dis" + _rand(10)),
    _form("url_password", "mongodb://svc:{S}@mongo.internal/db", "pa/ss@w0rd" + _rand(6)),
    _form("url_signature", "https://b.s3.amazonaws.com/f?X-Amz-Signature={S}&x=1", _hex(64)),
    _form("assignment", "DB_PASSWORD=2024-{S}", "Hunter2-" + _rand(8)),
    _form("assignment", "password=hunter{S} and more", _rand(10)),
    _form("assignment", "{\\\"api_key\\\": \\\"{S}\\\"}", _rand(24)),
    _form("keyed_high_entropy", "MY_SECRET_VALUE={S}", _rand(12) + "9" + _rand(11)),
]
