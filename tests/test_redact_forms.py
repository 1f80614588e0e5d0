"""The credential forms of #26 §1, one test each on a line as it appears in real use, and the
ordinary text beside them that must come through untouched.

Every value is made up. Each vector is (kind, line, expected line): the expectation is written
out whole, so a rule that takes too much (the context) or too little (part of the secret) fails.
"""

import base64
import json

import pytest

from memvault.hygiene.redact import redact

_PEM = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        "QyNTUxOQAAACDx7Qm1kq9Vb3hS0cYp6tF2uRw8nL4aZ3eJ5vK1oP9gXwAAAJg2mQmONpkJ\n-----END OPENSSH PRIVATE KEY-----\n")
_B64_KEY = base64.b64encode(_PEM.encode()).decode()
_CERT = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2x1c3Rlci1jYQ\n-----END CERTIFICATE-----\n").decode()
_DISCORD = "MTA4NjM2NzQ1ODk2NjY1MDg4Mw.GhT3xQ.q8Zr5VwK2mLp9XbN4cYt7JsD1fAe6GuH0iOkRnW"
_ATLASSIAN = "ATATT3xFfGF0" + "Tq8vLw2RzK5mNp9XbJ4cYt7sD1fAe6GuH0iOkRnWyZxQ3" * 4 + "=4C1D2E3F"
_OP = "ops_eyJzaWduSW5BZGRyZXNzIjoibXkuMXBhc3N3b3JkLmNvbSIsInVzZXJBdXRoIjp7Im1ldGhvZCI6IlNSUGctNDA5NiIsImFsZyI6" \
      "IlBCRVMyZy1IUzI1NiIsIml0ZXJhdGlvbnMiOjY1MDAwMCwic2FsdCI6InE4WnI1VndLMm1McDlYYk40Y1l0N0pzRDFmQWU2R3VIMGlP"
_PPK = ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: ci@build-01\nPublic-Lines: 2\n"
        "AAAAC3NzaC1lZDI1NTE5AAAAIHq8vLw2RzK5mNp9XbJ4cYt7sD1fAe6G\nuH0iOkRnWyZxQ3==\nPrivate-Lines: 1\n"
        "AAAAIGmLp9XbN4cYt7JsD1fAe6GuH0iOkRnWq8Zr5VwK2mLp\nPrivate-MAC: 5f0c2a9e7b31d4c86a0e9f2b7d3c1a4e6f8b0d2c4e6a8c0e2b4d6f8a0c2e4b6d\n")

VECTORS = [
    ("mysql_password", "mysql -h db.internal -u shop -pKw9!xTr42 shop < migrate.sql",
     "mysql -h db.internal -u shop -p[REDACTED:mysql_password] shop < migrate.sql"),
    ("sshpass_password", "sshpass -p 'Dz7#qLm20' scp build.tgz deploy@10.0.3.7:/srv/",
     "sshpass -p '[REDACTED:sshpass_password]' scp build.tgz deploy@10.0.3.7:/srv/"),
    ("redis_cli_password", "redis-cli -h 10.0.2.5 -a Rq8zWx3k --no-auth-warning DBSIZE",
     "redis-cli -h 10.0.2.5 -a [REDACTED:redis_cli_password] --no-auth-warning DBSIZE"),
    ("openssl_passphrase", "openssl rsa -in server.key -passin pass:Ch4ng3Me -out server.pem",
     "openssl rsa -in server.key -passin pass:[REDACTED:openssl_passphrase] -out server.pem"),
    ("netrc_password", "machine github.com login octocat password t0ps3cretNetrc",
     "machine github.com login octocat password [REDACTED:netrc_password]"),
    ("pgpass_line", "localhost:5432:analytics:report_ro:Rp0rtPw9x",
     "localhost:5432:analytics:report_ro:[REDACTED:pgpass_line]"),
    ("assignment", "        'password' => 'Symf0nyPw!',", "        'password' => '[REDACTED:assignment]',"),
    ("assignment", 'os.environ["DJANGO_DB_PASSWORD"] = "dj4ngoPw77"',
     'os.environ["DJANGO_DB_PASSWORD"] = "[REDACTED:assignment]"'),
    ("assignment", "RABBITMQ_PASS=guestPw2024", "RABBITMQ_PASS=[REDACTED:assignment]"),
    ("assignment", "SMB_PASSWD=Sh4reP4ss", "SMB_PASSWD=[REDACTED:assignment]"),
    ("assignment", "ORACLE_PWD=0racl3Pw", "ORACLE_PWD=[REDACTED:assignment]"),
    ("docker_pat", "docker login -u acme -p dckr_pat_Zq3RkT9vLw2mNp8XbJ4cYt7sD1f",
     "docker login -u acme -p [REDACTED:docker_pat]"),
    ("google_oauth", "refresh with 1//0gQ8r5VwK2mLp9XbN4cYt7JsD1fAe6GuH0iOkRnWq8Zr5VwK2mLp9XbN4c then retry",
     "refresh with [REDACTED:google_oauth] then retry"),
    ("password_word", "WLAN: FritzBox-7590, Passwort: Sommer2024!", "WLAN: FritzBox-7590, Passwort: [REDACTED:password_word]"),
    ("password_word", "Das Passwort für den Router: Herbst2024x", "Das Passwort für den Router: [REDACTED:password_word]"),
    ("password_word", "Le mot de passe : Printemps24", "Le mot de passe : [REDACTED:password_word]"),
    ("password_word", "contraseña: Verano2024", "contraseña: [REDACTED:password_word]"),
    ("password_word", "senha: Inverno2024", "senha: [REDACTED:password_word]"),
    ("password_word", "пароль: Zima2024x", "пароль: [REDACTED:password_word]"),
    ("password_word", "服务器密码：Xiatian2024", "服务器密码：[REDACTED:password_word]"),
    ("password_word", "パスワード：Natsu2024x", "パスワード：[REDACTED:password_word]"),
    ("base64_private_key", f"  id_ed25519: {_B64_KEY}\n", "  id_ed25519: [REDACTED:base64_private_key]\n"),
    ("discord_bot_token", f'client.run("{_DISCORD}")', 'client.run("[REDACTED:discord_bot_token]")'),
    ("url_password", '{"registry":"https:\\/\\/ci-bot:Jx8kPw3q@registry.acme.dev\\/v2\\/"}',
     '{"registry":"https:\\/\\/ci-bot:[REDACTED:url_password]@registry.acme.dev\\/v2\\/"}'),
    ("atlassian_api_token", f"JIRA token {_ATLASSIAN} (expires in 1 year)", "JIRA token [REDACTED:atlassian_api_token] (expires in 1 year)"),
    ("onepassword_token", f"OP token is {_OP} for the CI vault", "OP token is [REDACTED:onepassword_token] for the CI vault"),
    ("putty_private_key", _PPK, _PPK[: _PPK.index("Private-Lines")] + "[REDACTED:putty_private_key]\n"),
]


@pytest.mark.parametrize(("kind", "text", "expected"), VECTORS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(VECTORS)])
def test_each_round_two_form(kind: str, text: str, expected: str) -> None:
    redacted, counts = redact(text)
    assert redacted == expected
    assert counts == {kind: 1}
    assert redact(redacted) == (redacted, {})  # idempotent


# Prose and code that name passwords, flags and tokens without holding one.
ORDINARY = [
    "the password field is empty until the user types one",
    "pass the test, then bypass the cache; first_pass = compute_pass(); is_pass = False",
    "mysql -u root -p shop  # asks for the password",
    "run redis-cli with -a only on a trusted host; openssl asks for the pass phrase",
    "the default password is printed on the router; machine learning password reset flows",
    "Das Passwort ist zu kurz. Fehler: 42; Passwort vergessen? Hilfe hier",
    "Der Passwort-Manager speichert alles. Le mot de passe est trop court. La contraseña es débil.",
    "fe80:0000:0000:0000:0202:b3ff:fe1e:8329 and 12:30:45:00:99 and ratio 16:9:4:3:2",
    "NodeIndexOpenOrCreateTable.version.some_long_attribute_name_x",
    "https://example.com:8080/docs and https:\\/\\/example.com\\/path",
    f"ca.crt: {_CERT}",
    "Private-Lines in a .ppk file hold the key; the Public-Lines hold the public half",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == (text, {})


@pytest.mark.parametrize("line", ["Пароль: Zima2024x", "パスワード：Natsu2024x", "Contraseña: Verano2024", "hasło: Zima2024x"])
def test_password_words_in_json_ascii_escapes(line: str) -> None:
    # A tool's json.dumps output kept in a message spells the word as \u escapes (once or twice).
    secret = line.split()[-1].split("：")[-1]
    once = json.dumps({"out": line})
    for text in (once, json.dumps({"log": once})):
        redacted, counts = redact(text)
        assert secret not in redacted and counts == {"password_word": 1}
