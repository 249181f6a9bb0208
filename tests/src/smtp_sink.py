"""A real SMTP server for the notify tests (aiosmtpd, from PyPI): each message it accepts is
appended as one JSON line to OUT; with --refuse it answers every message with a temporary
failure (451), as a full or greylisting server would. Prints "ready PORT" once listening.

Usage: python smtp_sink.py OUT [--refuse]
"""

import asyncio
import email
import email.policy
import json
import socket
import sys

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, out, refuse):
        self.out = out
        self.refuse = refuse

    async def handle_DATA(self, server, session, envelope):
        if self.refuse:
            return "451 4.3.0 Mailbox busy, try again later"
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        record = {
            "from": envelope.mail_from,
            "to": envelope.rcpt_tos,
            "subject": str(message["subject"]),
            "message_id": str(message["message-id"]),
            "body": message.get_content(),
        }
        with open(self.out, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        return "250 OK"


async def main():
    out = sys.argv[1]
    refuse = "--refuse" in sys.argv[2:]
    # Controller checks its server by connecting to the port, so it needs a real one.
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    controller = Controller(Sink(out, refuse), hostname="127.0.0.1", port=port)
    controller.start()
    print(f"ready {controller.port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
