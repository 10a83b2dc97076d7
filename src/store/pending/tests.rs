//! Pending pictures in groups: read back as the records `put_picture` would have written, left
//! by a picture's first state, read beside the records of stores written before groups.

use super::*;
use crate::domain::{ContentHash, FetchState, Fetched, ImageFormat};
use crate::store::RecordKind;

const QUEUED: Timestamp = Timestamp(1_000);

fn open() -> (Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("dir");
    let store = Store::open(dir.path(), 1 << 20).expect("store");
    (store, dir)
}

fn url(n: usize) -> String {
    format!("https://img.example/{n}.jpg")
}

/// Queues one picture per source at `at` in one commit; their ids.
fn queue(store: &Store, sources: &[String], at: Timestamp) -> Vec<PictureId> {
    let turn = store.write_turn();
    let mut batch = turn.batch().expect("batch");
    let ids = (sources.iter())
        .map(|source| batch.queue_picture(source.clone(), at).expect("id"))
        .collect();
    turn.commit(batch).expect("commit");
    ids
}

/// Writes `records` as state records in one commit.
fn put_states(store: &Store, records: &[PictureRecord]) {
    let turn = store.write_turn();
    let mut batch = turn.batch().expect("batch");
    for record in records {
        batch.put_picture(record);
    }
    turn.commit(batch).expect("commit");
}

/// A picture as the old write made it: a state record and a due key of its own.
fn put_old_form(store: &Store, source: String) -> PictureId {
    let turn = store.write_turn();
    let mut batch = turn.batch().expect("batch");
    let id = PictureId(batch.allocate_id(RecordKind::Picture).expect("id"));
    batch.put_picture(&PictureRecord::pending(id, source, QUEUED));
    turn.commit(batch).expect("commit");
    id
}

fn keys_in(store: &Store, space: Keyspace) -> usize {
    store.db.scan_prefix(space.prefix()).count()
}

fn cropped(record: PictureRecord) -> PictureRecord {
    PictureRecord {
        state: FetchState::Fetched(Fetched {
            hash: ContentHash([1; 32]),
            format: ImageFormat::Jpeg,
            width: 10,
            height: 10,
            cropped: Some(ContentHash([2; 32])),
        }),
        updated_at: Timestamp(2_000),
        ..record
    }
}

fn retried(record: PictureRecord) -> PictureRecord {
    PictureRecord {
        state: FetchState::Failed {
            reason: "timed out".into(),
            next_try_at: Some(Timestamp(5_000)),
        },
        attempts: 1,
        updated_at: Timestamp(2_000),
        ..record
    }
}

fn ids(records: &[PictureRecord]) -> Vec<PictureId> {
    records.iter().map(|r| r.id).collect()
}

#[test]
fn queued_pictures_read_as_their_pending_records_sixteen_to_a_key() {
    let (store, _dir) = open();
    let sources: Vec<String> = (0..40).map(url).collect();
    let queued = queue(&store, &sources, QUEUED);
    assert_eq!(keys_in(&store, Keyspace::PendingPictures), 3, "16 + 16 + 8");
    assert_eq!(keys_in(&store, Keyspace::PictureState), 0);
    assert_eq!(keys_in(&store, Keyspace::PictureDue), 0);
    let expected: Vec<PictureRecord> = (queued.iter().zip(&sources))
        .map(|(id, source)| PictureRecord::pending(*id, source.clone(), QUEUED))
        .collect();
    for record in &expected {
        assert_eq!(
            store.pictures().picture(record.id).expect("read").as_ref(),
            Some(record)
        );
    }
    assert_eq!(
        store.pictures().pictures_maybe_due().expect("due"),
        expected
    );
    let past = PictureId(queued[39].0 + 1);
    assert_eq!(store.pictures().picture(past).expect("read"), None);
    assert_eq!(store.pictures().picture(PictureId(0)).expect("read"), None);
}

#[test]
fn a_pictures_first_state_takes_it_out_of_its_group_and_an_emptied_group_goes() {
    let (store, _dir) = open();
    let sources: Vec<String> = (0..20).map(url).collect();
    let queued = queue(&store, &sources, QUEUED);
    let pending = |i: usize| PictureRecord::pending(queued[i], sources[i].clone(), QUEUED);
    let mut states = vec![cropped(pending(0)), retried(pending(1))];
    // The second group's four, all done: its key goes.
    states.extend((16..20).map(|i| cropped(pending(i))));
    put_states(&store, &states);

    assert_eq!(keys_in(&store, Keyspace::PendingPictures), 1);
    assert_eq!(keys_in(&store, Keyspace::PictureState), 6);
    for state in &states {
        assert_eq!(
            store.pictures().picture(state.id).expect("read").as_ref(),
            Some(state)
        );
    }
    let due = store.pictures().pictures_maybe_due().expect("due");
    // The retried one once, by its state record; the cropped ones not at all.
    let mut expected = vec![retried(pending(1))];
    expected.extend((2..16).map(pending));
    assert_eq!(due, expected);

    // A later state of a picture already out of its group leaves the group alone.
    put_states(&store, &[cropped(pending(1))]);
    assert_eq!(
        ids(&store.pictures().pictures_maybe_due().expect("due")),
        ids(&expected[1..])
    );
    assert_eq!(keys_in(&store, Keyspace::PendingPictures), 1);
}

#[test]
fn a_picture_queued_and_given_a_state_in_one_write_reads_its_state() {
    let (store, _dir) = open();
    let turn = store.write_turn();
    let mut batch = turn.batch().expect("batch");
    let queued: Vec<PictureId> = (0..3)
        .map(|n| batch.queue_picture(url(n), QUEUED).expect("id"))
        .collect();
    let done = cropped(PictureRecord::pending(queued[1], url(1), QUEUED));
    batch.put_picture(&done);
    turn.commit(batch).expect("commit");
    drop(turn);
    assert_eq!(
        store.pictures().picture(queued[1]).expect("read"),
        Some(done)
    );
    assert_eq!(
        ids(&store.pictures().pictures_maybe_due().expect("due")),
        [queued[0], queued[2]]
    );
}

#[test]
fn records_of_the_old_form_read_beside_groups_and_inside_their_id_ranges() {
    let (store, _dir) = open();
    let before = put_old_form(&store, url(0));
    // One write queuing around a picture given its own record: the group's ids span it.
    let turn = store.write_turn();
    let mut batch = turn.batch().expect("batch");
    let first = batch.queue_picture(url(1), QUEUED).expect("id");
    let own = PictureId(batch.allocate_id(RecordKind::Picture).expect("id"));
    batch.put_picture(&PictureRecord::pending(own, url(2), QUEUED));
    let last = batch.queue_picture(url(3), QUEUED).expect("id");
    turn.commit(batch).expect("commit");
    drop(turn);
    let after = put_old_form(&store, url(4));

    assert_eq!(keys_in(&store, Keyspace::PendingPictures), 1);
    assert_eq!(keys_in(&store, Keyspace::PictureState), 3);
    let due = store.pictures().pictures_maybe_due().expect("due");
    assert_eq!(ids(&due), [before, first, own, last, after]);
    for (record, n) in due.iter().zip(0..) {
        assert_eq!(record, &PictureRecord::pending(record.id, url(n), QUEUED));
    }
    // The picture inside the group's range, cropped: read from its record, the group intact.
    let done = cropped(PictureRecord::pending(own, url(2), QUEUED));
    put_states(&store, std::slice::from_ref(&done));
    assert_eq!(store.pictures().picture(own).expect("read"), Some(done));
    assert_eq!(
        ids(&store.pictures().pictures_maybe_due().expect("due")),
        [before, first, last, after]
    );
}

#[test]
fn pictures_queued_at_another_time_start_a_group_of_their_own() {
    let (store, _dir) = open();
    let later = Timestamp(QUEUED.0 + 1);
    let turn = store.write_turn();
    let mut batch = turn.batch().expect("batch");
    let a = batch.queue_picture(url(0), QUEUED).expect("id");
    let b = batch.queue_picture(url(1), later).expect("id");
    turn.commit(batch).expect("commit");
    drop(turn);
    assert_eq!(keys_in(&store, Keyspace::PendingPictures), 2);
    assert_eq!(
        store.pictures().pictures_maybe_due().expect("due"),
        [
            PictureRecord::pending(a, url(0), QUEUED),
            PictureRecord::pending(b, url(1), later)
        ]
    );
}

/// Pages of any size walk the same pictures as one read, in order, each page bounded: state
/// records of both forms and groups interleaved, some pictures out of their group.
#[test]
fn the_due_pictures_read_a_page_at_a_time_are_the_whole_list() {
    let (store, _dir) = open();
    let before = put_old_form(&store, url(0));
    let sources: Vec<String> = (1..=40).map(url).collect();
    let queued = queue(&store, &sources, QUEUED);
    let pending = |i: usize| PictureRecord::pending(queued[i], sources[i].clone(), QUEUED);
    put_states(
        &store,
        &[
            retried(pending(3)),
            retried(pending(20)),
            cropped(pending(5)),
        ],
    );
    let after = put_old_form(&store, url(41));

    let mut expected = vec![PictureRecord::pending(before, url(0), QUEUED)];
    for i in (0..40).filter(|&i| i != 5) {
        expected.push(match i {
            3 | 20 => retried(pending(i)),
            _ => pending(i),
        });
    }
    expected.push(PictureRecord::pending(after, url(41), QUEUED));
    assert_eq!(
        store.pictures().pictures_maybe_due().expect("due"),
        expected
    );
    for limit in [0, 1, 2, 3, 5, 7, 16, 17, 100] {
        let (mut walked, mut from) = (Vec::new(), Some(PictureId(0)));
        while let Some(start) = from {
            let page = store
                .pictures()
                .pictures_maybe_due_page(start, limit)
                .expect("page");
            assert!(page.records.len() <= 2 * limit.max(1), "limit {limit}");
            assert!(page.next.is_none_or(|next| next > start), "limit {limit}");
            walked.extend(page.records);
            from = page.next;
        }
        assert_eq!(walked, expected, "limit {limit}");
    }
}
