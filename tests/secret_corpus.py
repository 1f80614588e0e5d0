"""A corpus of planted secret forms, shared by the redaction unit tests and the end-to-end leak test.

Every value is made up, built from pieces so that no file holds a ready-made credential. Each
form is ``(kind, text, needle)``: the kind redaction must report, a realistic text holding the
secret, and the secret part that must never be stored (checked byte for byte).
"""

import random
from collections.abc import Callable
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

# Round 2 (#26 §1): credentials whose form, not a vendor prefix, says what they are; each on a
# line as it appears in a shell history, a config file or a chat. Appended, so the values above
# (drawn from the same seeded generator) stay what they were.
_PPK_PRIVATE = _rand(44, _ALNUM + "+/")
_OPENSSH = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(_rand(70, _ALNUM + "+/") for _ in range(5)) \
    + "\n-----END OPENSSH PRIVATE KEY-----\n"
_B64_KEY = __import__("base64").b64encode(_OPENSSH.encode()).decode()

FORMS += [
    _form("mysql_password", "mysql -h db.internal -u app -p{S} orders < dump.sql", "T0p" + _rand(9) + "!"),
    _form("sshpass_password", "sshpass -p '{S}' ssh deploy@10.0.4.12 'systemctl restart app'", "W1nt3r#" + _rand(6)),
    _form("redis_cli_password", "redis-cli -h cache.internal -p 6379 -a {S} --no-auth-warning INFO keyspace",
          "R3dis" + _rand(10)),
    _form("openssl_passphrase", "openssl pkcs12 -in client.p12 -nodes -passin pass:{S} -out client.pem",
          "Exp0rt" + _rand(8)),
    _form("netrc_password", "cat ~/.netrc\nmachine api.heroku.com\n  login dev@example.org\n  password {S}\n",
          "n3trc" + _rand(12)),
    _form("pgpass_line", "echo 'db.prod.internal:5432:orders:app_rw:{S}' >> ~/.pgpass && chmod 600 ~/.pgpass",
          "Pg" + _rand(14)),
    _form("assignment", "'mysql' => [\n    'host' => env('DB_HOST'),\n    'password' => '{S}',\n],", "Lar4vel" + _rand(8)),
    _form("assignment", 'os.environ["SMTP_PASSWORD"] = "{S}"\nsend_report()', "Smtp" + _rand(10)),
    _form("assignment", "REDIS_HOST=cache\nREDIS_PASS={S}\nREDIS_DB=0", "rp" + _rand(14)),
    _form("assignment", "export FTP_PASSWD={S}; lftp -u ops $FTP_HOST", "Ftp" + _rand(9)),
    _form("assignment", "MYSQL_PWD={S} mysqldump --single-transaction shop > shop.sql", "My" + _rand(11)),
    _form("docker_pat", "echo {S} | docker login -u acmebuild --password-stdin", "dckr_pat_" + _rand(27, _ALNUM + "_-")),
    _form("google_oauth", '{"client_id": "1234.apps.googleusercontent.com", "refresh_token": "{S}"}',
          "1//0g" + _rand(98, _ALNUM + "_-")),
    _form("password_word", "Zugangsdaten für den Router — Benutzer: admin, Passwort: {S}", "Geh31m" + _rand(6)),
    _form("password_word", "identifiant : compta, mot de passe : {S} (à changer)", "S0leil" + _rand(6)),
    _form("password_word", "usuario: soporte / contraseña: {S}", "Cl4ve" + _rand(7)),
    _form("password_word", "login: financeiro, senha: {S}", "S3nha" + _rand(7)),
    _form("password_word", "логин: admin, пароль: {S}", "Par0l" + _rand(7)),
    _form("password_word", "数据库账号 root，密码：{S}，请勿外传", "Mima" + _rand(8)),
    _form("password_word", "ユーザー名: tanaka パスワード: {S}", "Pasu" + _rand(8)),
    _form("base64_private_key", "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/ssh-auth\ndata:\n  ssh-privatekey: {S}\n",
          _B64_KEY),
    _form("discord_bot_token", 'bot = commands.Bot(command_prefix="!")\nbot.run("{S}")',
          "MT" + _rand(24, _ALNUM) + "." + _rand(6, _ALNUM + "_-") + "." + _rand(38, _ALNUM + "_-")),
    _form("url_password", '{"remote": "https:\\/\\/deploy:{S}@git.example.com\\/acme\\/app.git"}', "J5on" + _rand(10)),
    _form("atlassian_api_token", "curl -H 'Accept: application/json' --user me@acme.io:{S} https://acme.atlassian.net/rest/api/3/myself",
          "ATATT3xFfGF0" + _rand(170, _ALNUM + "_-") + "=" + _hex(8).upper()),
    _form("onepassword_token", "export OP_SERVICE_ACCOUNT_TOKEN={S}\nop read op://prod/db/password",
          "ops_eyJzaWduSW5BZGRyZXNzIjoi" + _rand(300, _ALNUM + "+/")),
    _form("putty_private_key", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@ci\nPublic-Lines: 2\n"
          "AAAAC3NzaC1lZDI1NTE5AAAAI" + _rand(20) + "\n" + _rand(24) + "\nPrivate-Lines: 1\n{S}\nPrivate-MAC: " + _hex(64),
          _PPK_PRIVATE),
]


# A held-out set for bench/secret_leaks.py: the forms of #26 §1 and ten older kinds, each in a
# context written after the rules and not used to tune them (other commands, files and
# languages than FORMS above). ``held_out(copy)`` draws fresh values for every planted copy,
# so a leak found anywhere names the copy it came from.
_HELD_OUT: list[tuple[str, str, Callable[[random.Random], str]]] = [
    ("mysql_password", "mysqldump --single-transaction -uroot -p{S} --all-databases > all.sql",
     lambda r: "Dmp" + _draw(r, 10)),
    ("sshpass_password", "rsync -e \"sshpass -p {S} ssh -o StrictHostKeyChecking=no\" dist/ web@192.168.1.20:/var/www",
     lambda r: "Rs" + _draw(r, 10)),
    ("redis_cli_password", "redis-cli --pass {S} -n 2 FLUSHDB", lambda r: "Fl" + _draw(r, 12)),
    ("openssl_passphrase", "openssl enc -aes-256-cbc -salt -in backup.tar -out backup.enc -pass pass:{S}",
     lambda r: "Enc" + _draw(r, 9)),
    ("netrc_password", "printf 'machine pypi.internal login ci password {S}\\n' > ~/.netrc", lambda r: "Pi" + _draw(r, 12)),
    ("pgpass_line", "*:5432:*:replicator:{S}", lambda r: "Rep" + _draw(r, 11)),
    ("assignment", "$db = ['driver' => 'pgsql', 'password' => '{S}'];", lambda r: "Php" + _draw(r, 9)),
    ("assignment", "os.environ['MINIO_ROOT_PASSWORD'] = '{S}'", lambda r: "Min" + _draw(r, 10)),
    ("assignment", "LDAP_BIND_PASS={S} ./sync-users.sh", lambda r: "Ld" + _draw(r, 12)),
    ("docker_pat", "DOCKERHUB_TOKEN: {S}", lambda r: "dckr_pat_" + _draw(r, 27, _ALNUM + "_-")),
    ("google_oauth", "gcloud printed refresh token {S} — store it in the vault", lambda r: "1//0e" + _draw(r, 100, _ALNUM + "_-")),
    ("password_word", "Kennwort für das NAS: {S}", lambda r: "Nas" + _draw(r, 9)),
    ("password_word", "Wi-Fi « Maison » — mot de passe: {S}", lambda r: "Wifi" + _draw(r, 8)),
    ("password_word", "la contraseña del panel es\ncontraseña = {S}", lambda r: "Pan" + _draw(r, 9)),
    ("password_word", "acesso ao servidor — senha: {S}", lambda r: "Srv" + _draw(r, 9)),
    ("password_word", "Пароль: {S} (временный)", lambda r: "Vrem" + _draw(r, 8)),
    ("password_word", "路由器管理密码: {S}", lambda r: "Lyq" + _draw(r, 9)),
    ("password_word", "管理画面のパスワード：{S}", lambda r: "Kanri" + _draw(r, 7)),
    ("base64_private_key", "kubectl get secret deploy-key -o jsonpath='{.data.key}'\n{S}",
     lambda r: __import__("base64").b64encode(("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(
         _draw(r, 64, _ALNUM + "+/") for _ in range(4)) + "\n-----END RSA PRIVATE KEY-----\n").encode()).decode()),
    ("discord_bot_token", "DISCORD_BOT={S}", lambda r: "OT" + _draw(r, 24) + "." + _draw(r, 6) + "." + _draw(r, 38, _ALNUM + "_-")),
    ("url_password", '"DATABASE_URL":"postgresql:\\/\\/app:{S}@10.0.0.5:5432\\/app"', lambda r: "Pq" + _draw(r, 12)),
    ("atlassian_api_token", "confluence token {S}",
     lambda r: "ATATT3xFfGF0" + _draw(r, 170, _ALNUM + "_-") + "=" + _draw(r, 8, "0123456789ABCDEF")),
    ("onepassword_token", "op signin with {S}", lambda r: "ops_eyJ" + _draw(r, 320, _ALNUM + "+/")),
    ("putty_private_key", "Private-Lines: 2\n{S}\nPrivate-MAC: " + "ab" * 32,
     lambda r: _draw(r, 64, _ALNUM + "+/") + "\n" + _draw(r, 20, _ALNUM + "+/") + "=="),
    ("github_token", "git remote set-url origin https://x-access-token:{S}@github.com/acme/app.git",
     lambda r: "ghs_" + _draw(r, 36)),
    ("aws_access_key_id", "[default]\naws_access_key_id={S}", lambda r: "AKIA" + _draw(r, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")),
    ("url_password", "amqp://guest:{S}@rabbit:5672/", lambda r: "Mq" + _draw(r, 12)),
    ("openai_api_key", "OPENAI_API_KEY={S} python eval.py", lambda r: "sk-proj-" + _draw(r, 48)),
]


def _draw(rng: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def held_out(copy: int) -> list[Form]:
    """The held-out forms with values drawn for planted copy number ``copy``."""
    rng = random.Random(9001 + copy)
    return [_form(kind, template, make(rng)) for kind, template, make in _HELD_OUT]
