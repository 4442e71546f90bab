"""Runs moto's server with the fixes jobkit's offline stack needs.

Usage (instead of moto_server): python localstack/motofix/server.py -H 127.0.0.1 -p 4566

Fix 1, SQS FIFO message group order. moto releases a message group's lock lazily, while it walks
the queue during ReceiveMessage: when several messages of one group are in flight and their
visibility timeouts pass together (a batch whose failed items return to the queue), the walk meets
the group's first message while a later one still counts as in flight, skips it, then releases and
delivers the later one first. SQS hands a group out from its first message again. The fix releases
every in-flight message whose visibility timeout has passed before the walk starts (and keeps the
walk from releasing any itself), so a group resumes at its first message.

Fix 2, FIFO long polls. While every visible message belongs to a message group that is in flight,
moto's long poll finds nothing to deliver yet wakes at once, again and again, until WaitTimeSeconds
ends: one CPU spinning per waiting consumer. The fix sleeps 50 ms between such rounds.

Fix 3, ReceiveMessage cost. For every message it delivers, moto checks the retention period by
computing all the queue's attributes, three of which walk every message in the queue: a receive of
10 from a queue holding 600 messages took 0.6 s. The fix reads the retention period directly.

Fix 4, thread safety. The server runs each request on its own thread. Fix 1 walks a queue's
in-flight set while other requests change it ("Set changed size during iteration": a 500 on a
receive, a send or a queue's attributes), so it walks a copy, taken atomically. moto's DynamoDB
TransactWriteItems deep-copies the tables it writes while other requests write them ("dictionary
changed size during iteration": a 500), so the DynamoDB item operations take one lock.

Fix 5, TransactWriteItems cost. To roll a cancelled transaction back, moto deep-copies every table
the transaction writes, on every transaction: with 10,000 items in an idempotency table each job's
transaction copied all of them (seconds per call, and hundreds of MB of garbage a minute). The fix
saves the items the transaction writes and restores those when it fails; the table copy is skipped.

Fix 6, concurrent receives. moto's ReceiveMessage walks the queue and marks the messages it hands
out without a lock, so two receives at once could both hand out one message (a duplicate delivery
with a receive count of 1), or two messages of one FIFO message group (which SQS never has in
flight at once). The fix makes a queue's receives take turns; a long poll lets go while it waits. Releasing expired
messages (Fix 1) and changing a message's visibility take the same turn: a receive adds a message
to the in-flight set a moment before it sets the message's new visibility timeout, and a release
in that moment (a GetQueueAttributes, say) took the still-visible message out of the set again,
so the next receive handed out the rest of its FIFO group while it was being worked on.

Fix 7, deletes. moto deletes a message by building a new list of the queue's messages and
assigning it, without the lock sends append under: a message sent meanwhile was dropped (a job
lost although SendMessage succeeded), and of two deletes at once one could bring the other's
message back. The fix takes the queue's lock for the delete.

Fix 8, FIFO order within a receive. moto's walk skips the messages of the groups in flight when
it starts, but recomputes that set whenever it meets a message whose visibility timeout has just
passed: a group whose last in-flight message was deleted meanwhile is then open for the rest of
the walk, which hands out the group's later messages after having passed over its earlier ones
(a posting 20 before 14). The walk below fixes the closed groups when it starts and only adds to
them: a group passed over stays closed until the next receive.
Fix 9, cross-origin requests. moto's server answers every web page: flask-cors reflects any
Origin in Access-Control-Allow-Origin, preflights included, so while the emulator runs, a page the
developer visits could read local state (/moto-api/data.json) or enqueue jobs that the local
function binaries then run. The SDK never sends an Origin, so nothing here needs CORS: it is turned
off (moto's MOTO_DISABLE_GLOBAL_CORS), every Access-Control-* response header is dropped, and a
request a browser marks as coming from another site (an Origin other than the emulator's own, or
Sec-Fetch-Site cross-site or same-site) or naming a host other than a loopback name (DNS
rebinding) is refused with 403 before moto sees it.

Fix 10, empty message attribute values. SQS refuses a message attribute whose value is empty
("Name, type, value and the message body must not be empty or null": MessageAttributeValue in the
API reference); moto stores it, so a runtime that dead-letters with an empty reason attribute
passed here and failed on AWS. The fix refuses it with InvalidParameterValue, as AWS does: in
SendMessageBatch for that entry alone (in Failed), the others sent.

Fix 11, ChangeMessageVisibilityBatch and DeleteMessageBatch of more than 10 entries. SQS refuses
them with TooManyEntriesInBatchRequest (their API references: at most 10); moto handled them all,
so a heartbeat or a delete batching 11 passed here. The fix refuses them, as moto already does for
SendMessageBatch.

Fix 12, FIFO SequenceNumber. SQS's SequenceNumber "continues to increase for a particular
MessageGroupId" (SendMessage in the API reference); moto draws 20 random digits. The fix numbers
messages from one increasing counter, 20 digits as before.

Fix 13, DeadLetterQueueSourceArn. A message SQS moved to a dead-letter queue carries the source
queue's ARN as this system attribute (ReceiveMessage in the API reference); moto has none. The fix
remembers the source when its receive moves a message and adds the attribute to receives that
ask for it (or for All).

Fix 14, UpdateItem's ReturnValues. moto reads the item for UPDATED_OLD/ALL_OLD before the update
and renders the updated item after it, both outside Fix 4's lock, so two updates of one item at
once could both answer the same old (or new) value although each applied its own change: two
rate-limit reservations with one due time. DynamoDB answers each update with its own values. The
fix runs UpdateItem's whole handler under the DynamoDB lock.

Fix 15, stream records of a cancelled transaction. A cancelled TransactWriteItems writes nothing,
so its table's stream gets no record; moto applies the writes, with their stream records, and
rolls back (Fix 5) with more: an INSERT then a REMOVE for an item that never existed. A
transactional outbox's forwarder reading that stream sent a job for a write that did not happen.
The fix drops the records a cancelled transaction added.

Fix 16, deep queues. moto reads the clock twice per message whenever it lists a queue's visible
messages (each message's "visible" and "delayed" call unix_time_millis, ~30 us each): a receive
of 10 from a queue holding 10,000 messages took 0.65 s, and so did every long poll's wake-up on a
send; a DeleteMessageBatch of 10 took 0.1 s (each delete asked every message whether a receipt
handle was its own, twice); a GetQueueAttributes 1 s. The server is one Python process, so a
lane flooded with bulk jobs slowed every call on every other queue: the critical lane's p95 wait
grew 6-10x. The fix reads the clock once per listing and compares numbers; the receive walk
stops once it has its messages instead of listing the queue first; each receipt handle a receive
hands out is indexed (weakly: a message gone is gone from the index), so a delete or a visibility
change finds its message at once, and a handle not in the index takes moto's own search.

Fix 17, the module list. To route a request, moto asks whether its host names one of its service
modules by listing its package directory and asking the file system about each of its 174 entries:
0.47 ms a request, before any work, on a server where a DynamoDB call takes 3 to 4 ms under the
offline stack's load. The directory does not change while the server runs: the fix lists it once.

Fix 18, the oldest message's age in CloudWatch. SQS publishes each queue's metrics to CloudWatch
every minute (namespace AWS/SQS, dimension QueueName), ApproximateAgeOfOldestMessage among them;
moto publishes nothing, so whatever reads a queue's oldest age from CloudWatch (jobkit queues, the
console, the AgeAlarm's metric) found no datapoint offline. The fix puts that metric into moto's
CloudWatch every JOBKIT_SQS_METRICS_INTERVAL seconds (default 60; localstack/emulator.sh sets 10)
for every queue that holds messages: the age of the oldest message not deleted and not delayed, in
flight included, in whole seconds. (Only the age: nothing reads the counts from CloudWatch, and
moto keeps every datapoint for the life of the server.)

Fix 19, per-request work that does not change. On every request moto lists its response class's
methods with inspect.getmembers (~0.1 ms, before the action runs), and werkzeug formats and
writes a log line (~0.1 ms, and a log file that grows by a line per request for the server's
life). The class's methods do not change once the fixes above are in place: the fix lists each
class once. The request log keeps the answers that are the server's own failures (5xx); tracebacks
are logged as before.
"""

import itertools
import os
import sys
import threading
import time

from moto.core.utils import unix_time
from moto import backends as moto_backends
from moto import server as moto_server
from moto.moto_server import werkzeug_app
from moto.server import main
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb import responses as dynamodb_responses
from moto.sqs import exceptions as sqs_exceptions
from moto.sqs import models
from moto.sqs import responses as sqs_responses


def _release_expired(queue):
    pending = queue._pending_messages
    # tuple() copies the set in one step under the GIL; iterating the set itself races with the
    # requests that change it.
    expired = [m for m in tuple(pending) if m.visible]
    for m in expired:
        pending.discard(m)


_receive_message = models.SQSBackend.receive_message


def receive_message(self, queue_name, *args, **kwargs):
    _release_expired(self.get_queue(queue_name))
    return _receive_message(self, queue_name, *args, **kwargs)


models.SQSBackend.receive_message = receive_message

_messages = models.Queue.messages.fget


def messages(self):
    _release_expired(self)
    return _messages(self)


models.Queue.messages = property(messages)

_wait_for_messages = models.Queue.wait_for_messages


def wait_for_messages(self, timeout):
    if _messages(self):
        # Messages are visible but none could be delivered (their groups are in flight): waiting
        # on the condition would return at once.
        time.sleep(0.05)
        return
    _wait_for_messages(self, timeout)


models.Queue.wait_for_messages = wait_for_messages


def is_message_valid_based_on_retention_period(self, queue_name, message):
    retention = int(self.get_queue(queue_name).message_retention_period)
    return retention + message.sent_timestamp / 1000 > unix_time()


models.SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period

_dynamodb_lock = threading.RLock()


def _locked(fn):
    def locked(*args, **kwargs):
        with _dynamodb_lock:
            return fn(*args, **kwargs)

    locked.__name__ = fn.__name__
    locked.__doc__ = fn.__doc__
    return locked


for _name in (
    "put_item", "update_item", "delete_item", "get_item", "query", "scan",
    "batch_get_item", "batch_write_item", "transact_get_items", "transact_write_items",
    "execute_statement", "batch_execute_statement", "execute_transaction",
):
    setattr(dynamodb_models.DynamoDBBackend, _name, _locked(getattr(dynamodb_models.DynamoDBBackend, _name)))

_sending = threading.local()
_attributes = models.Queue.attributes.fget


def attributes(self):
    if getattr(_sending, "active", False):
        if self.fifo_queue:
            return {"ContentBasedDeduplication": str(bool(self.content_based_deduplication)).lower()}
        return {}
    return _attributes(self)


models.Queue.attributes = property(attributes)

_send_message = models.SQSBackend.send_message


def send_message(self, *args, **kwargs):
    _sending.active = True
    try:
        return _send_message(self, *args, **kwargs)
    finally:
        _sending.active = False


models.SQSBackend.send_message = send_message

_send_message_batch = models.SQSBackend.send_message_batch


def send_message_batch(self, *args, **kwargs):
    _sending.active = True
    try:
        return _send_message_batch(self, *args, **kwargs)
    finally:
        _sending.active = False


models.SQSBackend.send_message_batch = send_message_batch

import copy as _copy  # noqa: E402


class _CopyWithoutTables:
    """Stands for the copy module in moto's DynamoDB models (Fix 5): a deep copy of a table is the
    table itself, since transact_write_items below rolls back the items it saved instead."""

    def deepcopy(self, x, memo=None):
        if isinstance(x, dynamodb_models.Table):
            return x
        return _copy.deepcopy(x, memo)

    def __getattr__(self, name):
        return getattr(_copy, name)


dynamodb_models.copy = _CopyWithoutTables()
_transact_write_items = dynamodb_models.DynamoDBBackend.transact_write_items


def transact_write_items(self, transact_items, *args, **kwargs):
    with _dynamodb_lock:
        saved = []
        streams = {}  # table name -> (its stream shard, how many records it held before) (Fix 15)
        for entry in transact_items:
            try:
                op_type, op = next(iter(entry.items()))
                table = self.tables.get(op.get("TableName"))
                if table is None:
                    continue
                attrs = op["Item"] if op_type == "Put" else op["Key"]
                hash_key = dynamodb_models.DynamoType(attrs[table.hash_key_attr])
                range_key = None
                if table.range_key_attr is not None:
                    range_key = dynamodb_models.DynamoType(attrs[table.range_key_attr])
                old = table.get_item(hash_key, range_key)
            except Exception:  # noqa: BLE001 - a malformed entry: moto rejects the request itself
                continue
            saved.append((table, hash_key, range_key, _copy.deepcopy(old)))
            shard = getattr(table, "stream_shard", None)
            if shard is not None and table.name not in streams:
                streams[table.name] = (shard, len(shard.items))
        try:
            return _transact_write_items(self, transact_items, *args, **kwargs)
        except Exception:
            for table, hash_key, range_key, old in reversed(saved):
                if old is None:
                    table.delete_item(hash_key, range_key)
                elif range_key is not None:
                    table.items[hash_key][range_key] = old
                else:
                    table.items[hash_key] = old
            for shard, n in streams.values():
                del shard.items[n:]  # a cancelled transaction changed nothing: no stream record
            raise


dynamodb_models.DynamoDBBackend.transact_write_items = transact_write_items

_receiving = threading.local()
# A name of its own: Fix 1's receive_message calls the global _receive_message (moto's), which
# must not become this wrapper's target (that recursed without end: every receive failed).
_receive_message_fixed = models.SQSBackend.receive_message


def _receive_lock(queue):
    # dict.setdefault is atomic: every receive of the queue gets the same lock. Reentrant: a
    # receive releases expired messages (Fix 1) while it holds it.
    return queue.__dict__.setdefault("_jobkit_receive_lock", threading.RLock())


def receive_message_in_turn(self, queue_name, *args, **kwargs):
    lock = _receive_lock(self.get_queue(queue_name))
    with lock:
        _receiving.lock = lock
        try:
            return _receive_message_fixed(self, queue_name, *args, **kwargs)
        finally:
            _receiving.lock = None


models.SQSBackend.receive_message = receive_message_in_turn
_wait_in_turn = models.Queue.wait_for_messages


def wait_for_messages_unlocked(self, timeout):
    lock = getattr(_receiving, "lock", None)
    if lock is None:
        return _wait_in_turn(self, timeout)
    lock.release()
    try:
        return _wait_in_turn(self, timeout)
    finally:
        lock.acquire()


models.Queue.wait_for_messages = wait_for_messages_unlocked
_release_expired_at_once = _release_expired


def _release_expired(queue):  # noqa: F811 - Fix 1's release, in the queue's receive turn
    with _receive_lock(queue):
        _release_expired_at_once(queue)


_change_message_visibility = models.SQSBackend.change_message_visibility


def change_message_visibility_in_turn(self, queue_name, *args, **kwargs):
    with _receive_lock(self.get_queue(queue_name)):
        return _change_message_visibility(self, queue_name, *args, **kwargs)


models.SQSBackend.change_message_visibility = change_message_visibility_in_turn

_queue_delete_message = models.Queue.delete_message


def delete_message_locked(self, receipt_handle):
    with self._messages_lock:
        return _queue_delete_message(self, receipt_handle)


models.Queue.delete_message = delete_message_locked

def _receive_walk(self, queue_name, count, wait_seconds_timeout, visibility_timeout, message_attribute_names=None):
    """moto's SQSBackend.receive_message with Fix 8: the same walk, with the FIFO groups closed
    for the whole walk fixed when it starts."""
    if message_attribute_names is None:
        message_attribute_names = []
    queue = self.get_queue(queue_name)
    result = []
    previous_result_count = 0
    polling_end = unix_time() + wait_seconds_timeout
    while True:
        if result or (wait_seconds_timeout and unix_time() > polling_end):
            break
        messages_to_dlq = []
        closed = set(queue.pending_message_groups) if queue.fifo_queue else set()
        for message in queue.messages:
            if not message.visible:
                continue
            if message in queue.pending_messages:
                # Visible again: its consumer timed out. A FIFO message's group was closed when
                # the walk began: it is handed out by the next receive, in its group's order.
                queue.pending_messages.discard(message)
                if queue.fifo_queue:
                    continue
            if queue.fifo_queue and message.group_id and message.group_id in closed:
                continue
            if (
                queue.dead_letter_queue is not None
                and queue.redrive_policy
                and message.approximate_receive_count >= queue.redrive_policy["maxReceiveCount"]
            ):
                messages_to_dlq.append(message)
                continue
            queue.pending_messages.add(message)
            message.mark_received(visibility_timeout=visibility_timeout)
            message_copy = _copy.deepcopy(message)
            models._filter_message_attributes(message_copy, message_attribute_names)
            if not self.is_message_valid_based_on_retention_period(queue_name, message):
                break
            result.append(message_copy)
            if len(result) >= count:
                break
        for message in messages_to_dlq:
            queue._messages.remove(message)
            _dlq_source[message.id] = queue.queue_arn  # Fix 12
            queue.dead_letter_queue.add_message(message)
        if previous_result_count == len(result):
            if wait_seconds_timeout == 0:
                break
            queue.wait_for_messages(1)
            continue
        previous_result_count = len(result)
    return result


# Fix 17: the module list, read once (sorted, as moto lists it; membership by a set).
class _Modules(tuple):
    def __contains__(self, name):
        return name in _module_set


_modules = _Modules(moto_backends.list_of_moto_modules())
_module_set = frozenset(_modules)
moto_backends.list_of_moto_modules = lambda: _modules

# Fix 1's receive_message calls moto's walk through this name.
_receive_message = _receive_walk

# Fix 9: no CORS. moto reads MOTO_DISABLE_GLOBAL_CORS when its settings are imported (above), so
# the flag is set on the imported module as well as in the environment.
os.environ["MOTO_DISABLE_GLOBAL_CORS"] = "1"
werkzeug_app.DISABLE_GLOBAL_CORS = True

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def _hostname(host):
    """The host name of a Host header value, without its port."""
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _local_host(host):
    name = _hostname(host).lower()
    return name in _LOCAL_HOSTS or name.endswith(".localhost")


def _refusal(environ):
    """Why a request must not reach moto, or None."""
    host = environ.get("HTTP_HOST", "")
    if host and not _local_host(host):
        return "host %r is not a loopback name" % host
    origin = environ.get("HTTP_ORIGIN")
    if origin is not None and origin != "http://" + host:
        return "cross-origin request from %r" % origin
    if environ.get("HTTP_SEC_FETCH_SITE", "none") not in ("none", "same-origin"):
        return "request from another site (Sec-Fetch-Site %s)" % environ["HTTP_SEC_FETCH_SITE"]
    return None


class _NoCORSDispatcher(moto_server.DomainDispatcherApplication):
    """moto's WSGI application without CORS (Fix 9)."""

    def __call__(self, environ, start_response):
        reason = _refusal(environ)
        if reason is not None:
            body = ("jobkit emulator: refused: %s\n" % reason).encode()
            start_response("403 Forbidden", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
            return [body]

        def start_without_cors(status, headers, exc_info=None):
            kept = [(k, v) for k, v in headers if not k.lower().startswith(("access-control-", "connection"))]
            # One request per connection: a client reusing a kept-alive connection the server is
            # closing loses the response mid-body, and the SDK then retries a call that already
            # took effect (a batch sent twice, a conditional put failing on its own first write).
            kept.append(("Connection", "close"))
            return start_response(status, kept, exc_info)

        return super().__call__(environ, start_without_cors)


moto_server.DomainDispatcherApplication = _NoCORSDispatcher

# Fix 10: refuse empty message attribute values.
_validate_message_attributes = sqs_responses.validate_message_attributes


def validate_message_attributes(message_attributes):
    _validate_message_attributes(message_attributes)
    for name, value in (message_attributes or {}).items():
        if value.get("StringValue") == "" or value.get("BinaryValue") in ("", b""):
            raise sqs_exceptions.MessageAttributesInvalid(
                f"The message attribute '{name}' must contain non-empty message attribute value "
                f"for message attribute type '{value.get('DataType')}'."
            )


sqs_responses.validate_message_attributes = validate_message_attributes


def send_message_batch_per_entry(self):
    """moto's SendMessageBatch with Fix 10 per entry: SQS reports an entry whose attributes it
    refuses in Failed (SenderFault, InvalidParameterValue) and sends the rest; moto's own check
    refuses the whole call."""
    queue_name = self._get_queue_name()
    queue = self.sqs_backend.get_queue(queue_name)
    entries, refused = {}, []
    for idx, entry in enumerate(self._get_param("Entries", [])):
        entry.setdefault("MessageAttributes", {})
        try:
            validate_message_attributes(entry["MessageAttributes"])
        except sqs_exceptions.SQSException as err:
            refused.append({"Id": entry.get("Id"), "SenderFault": True, "Code": err.code, "Message": err.message})
            continue
        entry.setdefault("DelaySeconds", None)
        entries[str(idx)] = entry
    if not entries and not refused:
        raise sqs_exceptions.EmptyBatchRequest()
    messages, failed = self.sqs_backend.send_message_batch(queue_name, entries) if entries else ([], [])
    resp = {"Successful": [], "Failed": refused + list(failed)}
    for msg in messages:
        item = {"Id": msg.user_id, "MessageId": msg.id, "MD5OfMessageBody": msg.body_md5}
        if len(msg.message_attributes) > 0:
            item["MD5OfMessageAttributes"] = msg.attribute_md5
        if queue.fifo_queue:
            item["SequenceNumber"] = msg.sequence_number
        resp["Successful"].append(item)
    return sqs_responses.ActionResult(resp)


sqs_responses.SQSResponse.send_message_batch = send_message_batch_per_entry

# Fix 11: refuse ChangeMessageVisibilityBatch and DeleteMessageBatch of more than 10 entries.
_change_message_visibility_batch = sqs_responses.SQSResponse.change_message_visibility_batch


def change_message_visibility_batch(self):
    entries = self._get_param("Entries", [])
    if len(entries) > 10:
        raise sqs_exceptions.TooManyEntriesInBatchRequest(len(entries))
    return _change_message_visibility_batch(self)


sqs_responses.SQSResponse.change_message_visibility_batch = change_message_visibility_batch
_delete_message_batch = sqs_responses.SQSResponse.delete_message_batch


def delete_message_batch(self):
    entries = self._get_param("Entries", [])
    if len(entries) > 10:
        raise sqs_exceptions.TooManyEntriesInBatchRequest(len(entries))
    return _delete_message_batch(self)


sqs_responses.SQSResponse.delete_message_batch = delete_message_batch


# Fix 12: FIFO sequence numbers increase.
_sequence = itertools.count(10**19)
_send_message_unnumbered = models.SQSBackend.send_message


def send_message_numbered(self, *args, **kwargs):
    message = _send_message_unnumbered(self, *args, **kwargs)
    # A deduplicated send answers the first message again: it keeps its number.
    if message.sequence_number is not None and not getattr(message, "_numbered", False):
        message.sequence_number = str(next(_sequence))
        message._numbered = True
    return message


models.SQSBackend.send_message = send_message_numbered

# Fix 13: DeadLetterQueueSourceArn on messages moved to a dead-letter queue.
_dlq_source = {}  # message id -> the ARN of the queue it was moved from
_receive_response = sqs_responses.SQSResponse.receive_message


def receive_message_with_source(self):
    result = _receive_response(self)
    names = set(self._get_param("AttributeNames", []) + self._get_param("MessageSystemAttributeNames", []))
    if names & {"All", "DeadLetterQueueSourceArn"}:
        for msg in (result.result or {}).get("Messages", []):
            source = _dlq_source.get(msg.get("MessageId"))
            if source:
                msg.setdefault("Attributes", {})["DeadLetterQueueSourceArn"] = source
    return result


sqs_responses.SQSResponse.receive_message = receive_message_with_source


# Fix 14: UpdateItem answers with the values of its own update.
_update_item_response = dynamodb_responses.DynamoHandler.update_item


def update_item_locked(self):
    with _dynamodb_lock:
        return _update_item_response(self)


dynamodb_responses.DynamoHandler.update_item = update_item_locked



# Fix 16: deep queues — one clock reading per listing, a walk that stops when it has its
# messages, and receipt handles indexed for deletes and visibility changes.
import weakref  # noqa: E402

from moto.core.utils import unix_time_millis  # noqa: E402

_by_handle = weakref.WeakValueDictionary()  # receipt handle -> message
_mark_received = models.Message.mark_received


def mark_received_indexed(self, *args, **kwargs):
    _mark_received(self, *args, **kwargs)
    _by_handle[self.receipt_handle] = self


models.Message.mark_received = mark_received_indexed


def _visible(queue):
    """The queue's visible, undelayed messages: moto's Queue.messages with one clock reading."""
    now = unix_time_millis()
    return [m for m in tuple(queue._messages) if m.visible_at < now and m.delayed_until <= now]


def messages_fast(self):
    _release_expired(self)
    return _visible(self)


_messages = _visible  # noqa: F811 - Fix 2's wait reads the visible messages through this name
models.Queue.messages = property(messages_fast)
models.Queue.approximate_number_of_messages = property(lambda self: len(_visible(self)))


def _count(queue, pred):
    now = unix_time_millis()
    return sum(1 for m in tuple(queue._messages) if pred(m, now))


models.Queue.approximate_number_of_messages_delayed = property(
    lambda self: _count(self, lambda m, now: now < m.delayed_until))
models.Queue.approximate_number_of_messages_not_visible = property(
    lambda self: _count(self, lambda m, now: not now > m.visible_at))


class _Walk:
    """Stands for a queue in moto's receive walk (Fix 8's _receive_walk): its messages are the
    visible ones, produced lazily from one clock reading, so a walk that has its count stops
    without listing the rest of a deep queue."""

    def __init__(self, queue):
        self.__dict__["_queue"] = queue

    @property
    def messages(self):
        queue = self._queue
        _release_expired(queue)
        now = unix_time_millis()
        return (m for m in tuple(queue._messages) if m.visible_at < now and m.delayed_until <= now)

    def __getattr__(self, name):
        return getattr(self._queue, name)

    def __setattr__(self, name, value):
        setattr(self._queue, name, value)


_receive_walk_listing = _receive_walk


def _receive_walk(self, queue_name, *args, **kwargs):  # noqa: F811 - the walk over _Walk
    backend = _WalkBackend(self, queue_name)
    return _receive_walk_listing(backend, queue_name, *args, **kwargs)


class _WalkBackend:
    """The backend as the walk sees it: get_queue answers the _Walk of the queue."""

    def __init__(self, backend, queue_name):
        self._backend = backend
        self._walk = _Walk(backend.get_queue(queue_name))

    def get_queue(self, queue_name):
        return self._walk

    def __getattr__(self, name):
        return getattr(self._backend, name)


_receive_message = _receive_walk  # noqa: F811 - Fix 1's receive walks through this name
_delete_message_scan = models.Queue.delete_message


def delete_message_indexed(self, receipt_handle):
    message = _by_handle.get(receipt_handle)
    if message is None:
        return _delete_message_scan(self, receipt_handle)
    with self._messages_lock:
        if receipt_handle in self.deleted_messages:
            return
        try:
            self._messages.remove(message)  # identity: no message defines __eq__
        except ValueError:
            pass
        else:
            self.pending_messages.discard(message)
            self.deleted_messages.update(message.all_receipt_handles)
            for h in message.all_receipt_handles:
                _by_handle.pop(h, None)
            return
    _delete_message_scan(self, receipt_handle)  # not in this queue: moto's answer


models.Queue.delete_message = delete_message_indexed
_change_visibility_scan = models.SQSBackend.change_message_visibility


def change_message_visibility_indexed(self, queue_name, receipt_handle, visibility_timeout):
    queue = self.get_queue(queue_name)
    message = _by_handle.get(receipt_handle)
    if message is None or not any(m is message for m in tuple(queue._messages)):
        return _change_visibility_scan(self, queue_name, receipt_handle, visibility_timeout)
    with _receive_lock(queue):  # Fix 6's turn, as change_message_visibility_in_turn
        if unix_time_millis() + int(visibility_timeout) * 1000 - message.sent_timestamp > 43200 * 1000:
            raise sqs_exceptions.InvalidParameterValue(
                f"Value {visibility_timeout} for parameter VisibilityTimeout is invalid. Reason: Total "
                "VisibilityTimeout for the message is beyond the limit [43200 seconds]"
            )
        message.change_visibility(visibility_timeout)
        if message.visible and message in queue.pending_messages:
            queue.pending_messages.remove(message)


models.SQSBackend.change_message_visibility = change_message_visibility_indexed


# Fix 18: AWS/SQS metrics in moto's CloudWatch.
from moto.cloudwatch.models import cloudwatch_backends  # noqa: E402


def publish_sqs_metrics():
    now = unix_time_millis()
    for account_id, region, backend in list(models.sqs_backends.iter_backends()):
        data = []
        for queue in list(backend.queues.values()):
            msgs = tuple(queue._messages)
            if not msgs:
                continue
            ready = [m for m in msgs if m.delayed_until <= now]
            if ready:
                oldest = min(m.sent_timestamp for m in ready)
                data.append({"MetricName": "ApproximateAgeOfOldestMessage", "Value": float(max(0, now - oldest) // 1000),
                             "Unit": "Seconds", "Dimensions": [{"Name": "QueueName", "Value": queue.name}]})
        if data:
            cloudwatch_backends[account_id][region].put_metric_data("AWS/SQS", data)


def _sqs_metrics_loop(interval):
    while True:
        time.sleep(interval)
        try:
            publish_sqs_metrics()
        except Exception as err:  # a queue changing under the walk: the next round has it
            print(f"motofix: AWS/SQS metrics not published: {err!r}", file=sys.stderr)


# Fix 19: per-request work that does not change.
from moto.core import responses as core_responses  # noqa: E402
from moto.moto_server.werkzeug_app import MotoRequestHandler  # noqa: E402

_method_names = {}


def method_names_once(clazz):
    names = _method_names.get(clazz)
    if names is None:
        names = _method_names[clazz] = frozenset(_method_names_from_class(clazz))
    return names


_method_names_from_class = core_responses.method_names_from_class
core_responses.method_names_from_class = method_names_once
_log_request = MotoRequestHandler.log_request


def log_failures(self, code="-", size="-"):
    if str(code).startswith("5"):
        _log_request(self, code, size)


MotoRequestHandler.log_request = log_failures


if __name__ == "__main__":
    _interval = float(os.environ.get("JOBKIT_SQS_METRICS_INTERVAL") or 60)
    if _interval <= 0:
        _interval = 60
    threading.Thread(target=_sqs_metrics_loop, args=(_interval,), name="sqs-metrics", daemon=True).start()
    sys.exit(main())
