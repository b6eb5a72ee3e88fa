// SPDX-License-Identifier: GPL-2.0-or-later
// Item models under QAbstractItemModelTester, and their content against the analyzer's JSON
// report (`ddpscope analyze FILE --json`), or against core's Model when the CLI is absent; a
// damaged capture reported by the GUI's analysis worker at the frame the CLI names.
#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTemporaryDir>
#include <QtTest>
#include <cstring>
#include <map>
#include <vector>

#include "analysis_worker.h"
#include "bytes_model.h"
#include "findings_model.h"
#include "gui_test_util.h"
#include "region_table_model.h"
#include "regions_file.h"
#include "snapshot.h"
#include "stream_tree_model.h"

using namespace ddpscope;
using namespace ddpscope::gui;

namespace {

QJsonObject cliReport(const QString& file) {
  const QString cli = qEnvironmentVariable("DDPSCOPE_CLI");
  if (cli.isEmpty() || !QFileInfo::exists(cli)) return {};
  QProcess p;
  p.start(cli, {QStringLiteral("analyze"), file, QStringLiteral("--json")});
  if (!p.waitForFinished(120000)) return {};
  return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
}

// Offsets of the records of a little-endian classic pcap file, read from its record headers.
std::vector<qsizetype> pcapRecordOffsets(const QByteArray& file) {
  constexpr qsizetype kFileHeader = 24, kRecordHeader = 16;
  std::vector<qsizetype> at;
  qsizetype pos = kFileHeader;
  while (pos + kRecordHeader <= file.size()) {
    at.push_back(pos);
    quint32 caplen = 0;
    std::memcpy(&caplen, file.constData() + pos + 8, 4);
    pos += kRecordHeader + qsizetype(caplen);
  }
  return at;
}

// An STag as the CLI's JSON, the GUI and tshark write it: 8 digits.
QString stagText(std::uint32_t v) {
  return QStringLiteral("0x%1").arg(v, 8, 16, QLatin1Char('0'));
}

}  // namespace

class ModelsTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QVERIFY2(!test::allCaptures().isEmpty(), "no capture to test on"); }

  void modelsPassTester_data() {
    QTest::addColumn<QString>("file");
    for (const QString& f : test::allCaptures())
      QTest::newRow(qPrintable(QFileInfo(f).fileName())) << f;
  }
  void modelsPassTester() {
    QFETCH(QString, file);
    SnapshotPtr snap = analyze_capture(file.toStdString());
    QVERIFY2(snap->error.empty(), snap->error.c_str());

    StreamTreeModel tree;
    QAbstractItemModelTester t1(&tree, QAbstractItemModelTester::FailureReportingMode::QtTest);
    tree.setSnapshot(snap);
    tree.setSnapshot(snap);  // a second reset keeps it consistent
    FindingsModel findings;
    QAbstractItemModelTester t2(&findings, QAbstractItemModelTester::FailureReportingMode::QtTest);
    findings.setSnapshot(snap);
    FindingsFilterProxy proxy;
    proxy.setSourceModel(&findings);
    QAbstractItemModelTester t3(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.sort(FindingsModel::ColFrame, Qt::DescendingOrder);
    proxy.setFilterFixedString(QStringLiteral("ddp"));
    proxy.setMinimumSeverity(int(Severity::warning));
    proxy.setMinimumSeverity(int(Severity::note));
    proxy.setFilterFixedString(QString());
    QCOMPARE(proxy.rowCount(), findings.rowCount());
    RegionTableModel regions;
    QAbstractItemModelTester t4(&regions, QAbstractItemModelTester::FailureReportingMode::QtTest);
    regions.setSnapshot(snap);
    BytesModel bytes;
    QAbstractItemModelTester t5(&bytes, QAbstractItemModelTester::FailureReportingMode::QtTest);
    for (int r = 0; r < regions.rowCount(); ++r) {
      bytes.setRegion(snap, r);
      // Rows cover exactly the placed octets (holes as single rows).
      std::uint64_t placed = 0;
      for (int row = 0; row < bytes.rowCount(); ++row) {
        if (bytes.index(row, 0).data(BytesModel::HoleRole).toBool()) continue;
        for (int c = 0; c < int(BytesModel::kRowOctets); ++c) {
          const QModelIndex cell = bytes.index(row, BytesModel::ColOctet0 + c);
          const bool is_placed = cell.data(BytesModel::PlacedRole).toBool();
          placed += is_placed ? 1 : 0;
          QCOMPARE(cell.data().toString() == QLatin1String(".."), !is_placed);
        }
        QVERIFY(!bytes.index(row, BytesModel::ColFrames).data().toString().isEmpty());
      }
      if (!bytes.truncated())
        QCOMPARE(placed, snap->regions[std::size_t(r)].buffer->bytes_placed());
    }
    bytes.setRegion(snap, -1);
    QCOMPARE(bytes.rowCount(), 0);
  }

  void liveSnapshotsAreConsistent() {
    // Intermediate snapshots (every 0 ms here) feed the same models; frames only grow.
    const QString file = test::allCaptures().last();
    StreamTreeModel tree;
    QAbstractItemModelTester t(&tree, QAbstractItemModelTester::FailureReportingMode::QtTest);
    std::vector<SnapshotPtr> snaps;
    AnalysisCallbacks cb;
    cb.snapshot_interval_ms = 0;
    cb.snapshot = [&](SnapshotPtr s) { snaps.push_back(std::move(s)); };
    SnapshotPtr last = analyze_capture(file.toStdString(), cb);
    std::uint64_t frames = 0;
    for (const auto& s : snaps) {
      QVERIFY(!s->final);
      QVERIFY(s->frames_read >= frames);
      frames = s->frames_read;
      tree.setSnapshot(s);
    }
    QVERIFY(last->final);
    QVERIFY(last->frames_read >= frames);
    tree.setSnapshot(last);
  }

  void regionsFile() {
    QTemporaryDir dir;
    const QString cap = dir.filePath(QStringLiteral("x.pcap"));
    const QString side = dir.filePath(QStringLiteral("x.regions.json"));
    QFile f(side);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        R"([{"stag": "0x00003c03", "base": "0x7f0000300000", "length": 4096, "sink": "10.0.0.2"},
                {"stag": 7, "base": "4096", "length": "16"}])");
    f.close();
    QCOMPARE(sidecarRegionsFile(cap), side);
    RegionsFile file;
    QString err;
    QVERIFY2(loadRegionsFile(side, file, &err), qPrintable(err));
    const std::vector<RegionSpec>& specs = file.regions;
    QCOMPARE(int(specs.size()), 2);
    QCOMPARE(specs[0].stag, 0x3c03u);
    QCOMPARE(specs[0].base, 0x7f0000300000ull);
    QCOMPARE(specs[0].length, 4096ull);
    QVERIFY(specs[0].owner && specs[0].owner->to_string() == "10.0.0.2");
    QCOMPARE(specs[1].base, 4096ull);
    QVERIFY(!specs[1].owner);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(R"([{"base": 1, "length": 2}])");
    f.close();
    QVERIFY(!loadRegionsFile(side, file, &err));
    QVERIFY(err.contains(QStringLiteral("stag")));
    QVERIFY(sidecarRegionsFile(dir.filePath(QStringLiteral("y.pcap"))).isEmpty());
  }

  void cancelStopsEarly() {
    std::atomic<bool> cancel{true};
    AnalysisCallbacks cb;
    cb.cancel = &cancel;
    SnapshotPtr s = analyze_capture(test::allCaptures().first().toStdString(), cb);
    QVERIFY(s->final);
    // Cancel is checked every 64 frames: small captures may finish first.
    QVERIFY(s->cancelled || s->frames_read < 64);
    SnapshotPtr missing = analyze_capture("/nonexistent/capture.pcap");
    QVERIFY(!missing->error.empty());
    QVERIFY(missing->model);
  }

  // A capture cut inside a record: the GUI's worker (the path File › Open runs) reports
  // capture.truncated-file once, at the last complete frame, the frame `ddpscope analyze` names.
  void truncatedFileSameFrameAsCli() {
    QFile src(qEnvironmentVariable("DDPSCOPE_SAMPLES_DIR") +
              QStringLiteral("/synthetic/fault-msn.pcap"));
    QVERIFY(src.open(QIODevice::ReadOnly));
    const QByteArray whole = src.readAll();
    const std::vector<qsizetype> at = pcapRecordOffsets(whole);
    QVERIFY(at.size() > 12);
    constexpr std::uint64_t kComplete = 11;  // cut 20 octets into record 12
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("fault-msn-cut.pcap"));
    QFile cut(path);
    QVERIFY(cut.open(QIODevice::WriteOnly));
    cut.write(whole.left(at[kComplete] + 20));
    cut.close();

    AnalysisWorker worker;
    QSignalSpy done(&worker, &AnalysisWorker::finished);
    worker.analyze(path, QString(), 1);
    QCOMPARE(done.count(), 1);
    const SnapshotPtr snap = done.at(0).at(1).value<SnapshotPtr>();
    QVERIFY(snap && snap->final && !snap->cancelled);
    QCOMPARE(snap->frames_read, kComplete);
    FindingsModel findings;
    findings.setSnapshot(snap);
    std::vector<quint64> gui_frames;
    for (int r = 0; r < findings.rowCount(); ++r) {
      if (findings.index(r, FindingsModel::ColCode).data().toString() ==
          QStringLiteral("capture.truncated-file"))
        gui_frames.push_back(findings.index(r, FindingsModel::ColFrame).data().toULongLong());
    }
    QCOMPARE(gui_frames, std::vector<quint64>{kComplete});

    const QJsonObject report = cliReport(path);
    if (report.isEmpty()) QSKIP("analyzer CLI not built: the GUI's frame checked on its own");
    std::vector<quint64> cli_frames;
    for (const auto& fv : report.value(QStringLiteral("findings")).toArray()) {
      const QJsonObject f = fv.toObject();
      if (f.value(QStringLiteral("code")).toString() == QStringLiteral("capture.truncated-file"))
        cli_frames.push_back(quint64(f.value(QStringLiteral("frame")).toInteger()));
    }
    QCOMPARE(cli_frames, gui_frames);
  }

  // Placing octets again (ddp/shadow.h) as the GUI shows it, on the sample CI pins it with: the
  // reused buffer is no issue but says so, the conflict is one, and the finding list holds the
  // conflict at the frame the CLI and the plugin name.
  // Issue 14: on the real NFS/RDMA capture every region an RPC Call advertised is named by it
  // ("rpc-rdma: NFSv3 READ xid …"), and sorting by that column groups the regions per ULP.
  void regionsNamedByTheirUlpCommandGroupedPerUlp() {
    const QString path =
        qEnvironmentVariable("DDPSCOPE_SAMPLES_DIR") + QStringLiteral("/siw/siw-nfs-rdma.pcap");
    AnalysisWorker worker;
    QSignalSpy done(&worker, &AnalysisWorker::finished);
    worker.analyze(path, QString(), 1);
    QCOMPARE(done.count(), 1);
    const SnapshotPtr snap = done.at(0).at(1).value<SnapshotPtr>();
    QVERIFY(snap && snap->final);
    RegionTableModel regions;
    regions.setSnapshot(snap);
    QCOMPARE(regions.headerData(RegionTableModel::ColCommand, Qt::Horizontal).toString(),
             QStringLiteral("Upper layer"));
    int named = 0, reads = 0;
    for (int r = 0; r < regions.rowCount(); ++r) {
      const ShadowBuffer& b = *snap->regions[std::size_t(r)].buffer;
      const QString text = regions.index(r, RegionTableModel::ColCommand).data().toString();
      if (b.source == RegionSource::advertisement) {
        QVERIFY2(text.startsWith(QStringLiteral("rpc-rdma: ")), qPrintable(text));
        ++named;
        if (text.contains(QStringLiteral("NFSv3 READ xid 0x"))) ++reads;
      }
    }
    QVERIFY(named >= 20);
    QVERIFY(reads >= 3);
    QSortFilterProxyModel proxy;
    proxy.setSourceModel(&regions);
    proxy.setSortRole(RegionTableModel::SortRole);
    proxy.sort(RegionTableModel::ColCommand, Qt::AscendingOrder);
    // Sorted, the ULP-named regions come first and together, in advertising order.
    bool in_group = true;
    std::uint64_t last_frame = 0;
    for (int r = 0; r < proxy.rowCount(); ++r) {
      const QModelIndex src = proxy.mapToSource(proxy.index(r, 0));
      const ShadowBuffer& b = *snap->regions[std::size_t(src.row())].buffer;
      if (b.ulp.empty()) {
        in_group = false;
        continue;
      }
      QVERIFY2(in_group, "a ULP region after the unnamed ones");
      QVERIFY(b.learned_frame >= last_frame);
      last_frame = b.learned_frame;
    }
  }

  void reuseAndConflictAsTheCliReportsThem() {
    const QString path = qEnvironmentVariable("DDPSCOPE_SAMPLES_DIR") +
                         QStringLiteral("/synthetic/fault-conflict.pcap");
    AnalysisWorker worker;
    QSignalSpy done(&worker, &AnalysisWorker::finished);
    worker.analyze(path, QString(), 1);
    QCOMPARE(done.count(), 1);
    const SnapshotPtr snap = done.at(0).at(1).value<SnapshotPtr>();
    QVERIFY(snap && snap->final);
    RegionTableModel regions;
    regions.setSnapshot(snap);
    QString reused, conflicted;
    for (int r = 0; r < regions.rowCount(); ++r) {
      const RegionInfo& info = snap->regions[std::size_t(r)];
      const QString text = regions.index(r, RegionTableModel::ColIssues).data().toString();
      if (info.buffer->key.stag == 0x4d04) {
        reused = text;
        QCOMPARE(RegionTableModel::issueCount(info), std::uint64_t{0});
        QVERIFY(!regions.index(r, RegionTableModel::ColIssues).data(Qt::ForegroundRole).isValid());
      }
      if (info.buffer->key.stag == 0x5e05) conflicted = text;
    }
    QVERIFY2(reused.startsWith(QStringLiteral("reused: ")) &&
                 reused.contains(QStringLiteral("2 later segments")),
             qPrintable(reused));
    QVERIFY2(conflicted.contains(QStringLiteral("1 conflict")), qPrintable(conflicted));
    FindingsModel findings;
    findings.setSnapshot(snap);
    std::vector<quint64> frames;
    for (int r = 0; r < findings.rowCount(); ++r) {
      if (findings.index(r, FindingsModel::ColCode).data().toString() ==
          QStringLiteral("ddp.tagged.conflicting-placement")) {
        frames.push_back(findings.index(r, FindingsModel::ColFrame).data().toULongLong());
        QCOMPARE(findings.index(r, 0).data(FindingsModel::SeverityRole).toInt(),
                 int(Severity::warning));
      }
    }
    QCOMPARE(frames, std::vector<quint64>{17});  // samples/synthetic/fault-conflict.expected.json
  }

  void contentMatchesAnalyzer_data() { modelsPassTester_data(); }
  void contentMatchesAnalyzer() {
    QFETCH(QString, file);
    SnapshotPtr snap = analyze_capture(file.toStdString());
    const Model& m = *snap->model;
    StreamTreeModel tree;
    tree.setSnapshot(snap);
    FindingsModel findings;
    findings.setSnapshot(snap);
    RegionTableModel regions;
    regions.setSnapshot(snap);

    // Tree content, as (stream id) -> direction rows, queues, regions.
    struct TreeStream {
      QStringList dirs;
      std::map<QString, QString> queues;  // "d/QN n" -> "MSN a–b"
      int regions = 0;
    };
    std::map<int, TreeStream> shown;
    for (int r = 0; r < tree.rowCount(); ++r) {
      const QModelIndex s = tree.index(r, 0);
      if (s.data(StreamTreeModel::KindRole).toInt() != StreamTreeModel::KindStream) continue;
      TreeStream& ts = shown[s.data(StreamTreeModel::StreamRole).toInt()];
      for (int d = 0; d < tree.rowCount(s); ++d) {
        const QModelIndex di = tree.index(d, 0, s);
        ts.dirs << di.data().toString();
        for (int c = 0; c < tree.rowCount(di); ++c) {
          const QModelIndex ci = tree.index(c, 0, di);
          if (ci.data(StreamTreeModel::KindRole).toInt() == StreamTreeModel::KindRegion)
            ++ts.regions;
          else
            ts.queues[QString::number(d) + QLatin1Char('/') + ci.data().toString()] =
                tree.index(c, StreamTreeModel::ColDetails, di).data().toString();
        }
      }
    }

    const QJsonObject report = cliReport(file);
    if (report.isEmpty()) {
      // No CLI: compare against core's Model directly.
      std::size_t iwarp = 0;
      for (const auto& s : m.streams)
        iwarp += s.state != StreamState::not_iwarp && s.state != StreamState::unknown;
      QCOMPARE(shown.size(), iwarp);
      QCOMPARE(std::size_t(regions.rowCount()), m.memory.buffers().size());
      QCOMPARE(std::size_t(findings.rowCount()), m.findings.size());
      for (int r = 0; r < findings.rowCount(); ++r) {
        QCOMPARE(findings.index(r, FindingsModel::ColCode).data().toString(),
                 QString::fromUtf8(m.findings[std::size_t(r)].code().data()));
      }
      qInfo("analyzer CLI not built: compared with core's Model");
      return;
    }
    const QJsonArray streams = report.value(QStringLiteral("streams")).toArray();
    QCOMPARE(std::size_t(streams.size()), shown.size());
    int json_regions = report.value(QStringLiteral("regions")).toArray().size();
    for (const auto& sv : streams) {
      const QJsonObject s = sv.toObject();
      const int id = s.value(QStringLiteral("id")).toInt();
      QVERIFY2(shown.count(id), qPrintable(QStringLiteral("stream %1 missing").arg(id)));
      const TreeStream& ts = shown[id];
      const QJsonArray dirs = s.value(QStringLiteral("directions")).toArray();
      QCOMPARE(dirs.size(), ts.dirs.size());
      std::size_t queues = 0;
      for (int d = 0; d < dirs.size(); ++d) {
        const QJsonObject jd = dirs[d].toObject();
        QCOMPARE(ts.dirs[d], jd.value(QStringLiteral("from")).toString() + QStringLiteral(" → ") +
                                 jd.value(QStringLiteral("to")).toString());
        for (const auto& qv : jd.value(QStringLiteral("queues")).toArray()) {
          const QJsonObject q = qv.toObject();
          const QString key = QString::number(d) + QStringLiteral("/QN ") +
                              QString::number(q.value(QStringLiteral("qn")).toInteger());
          QVERIFY2(ts.queues.count(key), qPrintable(key));
          QCOMPARE(ts.queues.at(key), QStringLiteral("MSN %1–%2")
                                          .arg(q.value(QStringLiteral("first_msn")).toInteger())
                                          .arg(q.value(QStringLiteral("last_msn")).toInteger()));
          ++queues;
        }
      }
      QCOMPARE(ts.queues.size(), queues);
      const int stags = s.value(QStringLiteral("stags")).toArray().size();
      QCOMPARE(ts.regions, stags);
      json_regions += stags;
    }
    QCOMPARE(regions.rowCount(), json_regions);
    // Every JSON region appears in the region table with its bytes placed.
    std::map<QString, qint64> table;
    for (int r = 0; r < regions.rowCount(); ++r) {
      const ShadowBuffer& b = *snap->regions[std::size_t(r)].buffer;
      table[QString::fromStdString(b.key.owner.to_string()) + QLatin1Char('/') +
            stagText(b.key.stag)] = qint64(b.bytes_placed());
    }
    QJsonArray all = report.value(QStringLiteral("regions")).toArray();
    for (const auto& sv : streams)
      for (const auto& r : sv.toObject().value(QStringLiteral("stags")).toArray())
        all.append(r);
    for (const auto& rv : all) {
      const QJsonObject r = rv.toObject();
      const QString key = r.value(QStringLiteral("sink")).toString() + QLatin1Char('/') +
                          r.value(QStringLiteral("stag")).toString();
      QVERIFY2(table.count(key), qPrintable(key));
      QCOMPARE(table.at(key), r.value(QStringLiteral("bytes_placed")).toInteger());
    }
    const QJsonArray fj = report.value(QStringLiteral("findings")).toArray();
    QCOMPARE(findings.rowCount(), fj.size());
    for (int r = 0; r < fj.size(); ++r) {
      const QJsonObject f = fj[r].toObject();
      QCOMPARE(findings.index(r, FindingsModel::ColCode).data().toString(),
               f.value(QStringLiteral("code")).toString());
      QCOMPARE(findings.index(r, FindingsModel::ColFrame).data().toULongLong(),
               quint64(f.value(QStringLiteral("frame")).toInteger()));
      QCOMPARE(findings.index(r, 0).data(FindingsModel::SeverityRole).toInt(),
               int(m.findings[std::size_t(r)].severity));
      QVERIFY(findings.index(r, FindingsModel::ColSeverity)
                  .data()
                  .toString()
                  .startsWith(f.value(QStringLiteral("severity")).toString()));
      QCOMPARE(findings.index(r, FindingsModel::ColMessage).data().toString(),
               f.value(QStringLiteral("message")).toString());
      // No Terminate (absent, or null where the sink answers otherwise: "sink_outcome").
      const QString term = findings.index(r, FindingsModel::ColTerminate).data().toString();
      if (f.value(QStringLiteral("terminate")).isObject())
        QVERIFY(!term.isEmpty() && !term.startsWith(QStringLiteral("(none")));
      else if (f.contains(QStringLiteral("sink_outcome")))
        QCOMPARE(
            term,
            QStringLiteral("(none: %1)").arg(f.value(QStringLiteral("sink_outcome")).toString()));
      else
        QVERIFY(term.isEmpty());
    }
  }
};

QTEST_MAIN(ModelsTest)
#include "models_test.moc"
