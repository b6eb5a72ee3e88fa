// SPDX-License-Identifier: GPL-2.0-or-later
// The main window: background loading with snapshots, selection following a finding's frame
// across views, the region map and MSN chart interactions, "Open in Wireshark".
#include <QAction>
#include <QComboBox>
#include <QSettings>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>

#include "findings_model.h"
#include "gui_test_util.h"
#include "main_window.h"
#include "msn_chart_widget.h"
#include "region_map_widget.h"
#include "stream_tree_model.h"

using namespace ddpscope;
using namespace ddpscope::gui;

class MainWindowTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    test::useTemporarySettings(tmp_);
    QVERIFY(!test::allCaptures().isEmpty());
  }

  void backgroundLoadEmitsSnapshots() {
    MainWindow w;
    QSignalSpy done(&w, &MainWindow::analysisFinished);
    const QString file = test::allCaptures().first();
    w.openFile(file);
    QVERIFY(w.isAnalyzing());
    QVERIFY(done.wait(120000));
    QVERIFY(!w.isAnalyzing());
    QVERIFY(w.snapshot());
    QVERIFY(w.snapshot()->final);
    QVERIFY(!w.snapshot()->cancelled);
    SnapshotPtr sync = analyze_capture(file.toStdString());
    QCOMPARE(w.findingsModel()->rowCount(), int(sync->model->findings.size()));
    QCOMPARE(w.snapshot()->regions.size(), sync->regions.size());
    // Recent files remember it.
    QCOMPARE(QSettings().value(QStringLiteral("recentFiles")).toStringList().value(0),
             QFileInfo(file).absoluteFilePath());
  }

  void selectingAFindingFocusesItsFrameEverywhere_data() {
    QTest::addColumn<QString>("file");
    for (const QString& f : test::allCaptures())
      QTest::newRow(qPrintable(QFileInfo(f).fileName())) << f;
  }
  void selectingAFindingFocusesItsFrameEverywhere() {
    QFETCH(QString, file);
    MainWindow w;
    w.resize(1200, 800);
    QVERIFY(w.loadSynchronously(file));
    w.show();
    const Model& m = *w.snapshot()->model;
    if (m.findings.empty()) QSKIP("no findings in this capture");
    const int n = std::min<int>(int(m.findings.size()), 40);
    int with_region = 0, with_series = 0;
    for (int i = 0; i < n; ++i) {
      const Finding& f = m.findings[std::size_t(i)];
      w.selectFinding(i);
      QCOMPARE(w.focusedFrame(), f.frame);
      const QModelIndex cur = w.findingsView()->currentIndex();
      QCOMPARE(cur.data(FindingsModel::FrameRole).toULongLong(), quint64(f.frame));
      QCOMPARE(w.msnChart()->highlightFrame(), f.frame);
      QCOMPARE(w.regionMap()->highlightFrame(), f.frame);
      const QModelIndex tree = w.streamsView()->currentIndex();
      if (auto region = w.snapshot()->region_of_frame(f.frame)) {
        ++with_region;
        QCOMPARE(w.regionMap()->region(), int(*region));
        QCOMPARE(tree.data(StreamTreeModel::RegionRole).toInt(), int(*region));
      } else if (f.stream != UINT32_MAX && m.streams[f.stream].state != StreamState::not_iwarp) {
        QVERIFY(tree.isValid());
        QCOMPARE(tree.data(StreamTreeModel::StreamRole).toInt(), int(f.stream));
      }
      if (f.id == FindingId::ddp_untagged_msn_gap ||
          f.id == FindingId::ddp_untagged_msn_duplicate) {
        ++with_series;
        QVERIFY(w.msnChart()->series() >= 0);
        bool marked = false;
        for (const auto& [frame, dup] : w.msnChart()->markers())
          marked |= frame == f.frame;
        QVERIFY2(marked, "MSN gap/duplicate marker on the chart");
      }
    }
    qInfo("%d findings checked (%d in regions, %d MSN markers)", n, with_region, with_series);
  }

  void regionMapClickAndKeys() {
    // A capture with a region that has placed octets.
    for (const QString& file : test::allCaptures()) {
      MainWindow w;
      w.resize(1200, 800);
      QVERIFY(w.loadSynchronously(file));
      int region = -1;
      for (std::size_t i = 0; i < w.snapshot()->regions.size(); ++i)
        if (!w.snapshot()->regions[i].buffer->ranges().empty()) region = int(i);
      if (region < 0) continue;
      w.show();
      w.showView(MainWindow::ViewRegions);
      w.selectRegion(region);
      RegionMapWidget* map = w.regionMap();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      QCOMPARE(map->region(), region);
      const auto& spans = map->spans();
      QVERIFY(!spans.empty());
      int x = -1;
      for (const auto& s : spans)
        if (s.kind != SpanKind::hole) {
          x = (s.x0 + s.x1) / 2;
          break;
        }
      QVERIFY(x >= 0);
      QSignalSpy clicked(map, &RegionMapWidget::rangeClicked);
      const QRect bar = map->barRect();
      QTest::mouseClick(map, Qt::LeftButton, {}, QPoint(bar.left() + x, bar.center().y()));
      QCOMPARE(clicked.count(), 1);
      const quint64 frame = clicked.first().first().toULongLong();
      QVERIFY(frame > 0);
      QCOMPARE(w.focusedFrame(), std::uint64_t(frame));
      // Keyboard zoom and pan stay inside the domain.
      map->setFocus();
      const auto full = map->view();
      QTest::keyClick(map, Qt::Key_Plus);
      const auto zoomed = map->view();
      QVERIFY(zoomed.second - zoomed.first < full.second - full.first ||
              full.second - full.first <= 16);
      QTest::keyClick(map, Qt::Key_Right);
      QVERIFY(map->view().first >= map->domain().first);
      QVERIFY(map->view().second <= map->domain().second);
      QTest::keyClick(map, Qt::Key_Home);
      QCOMPARE(map->view(), full);
      return;
    }
    QSKIP("no capture with placed tagged data");
  }

  void wiresharkActionRunsWithFrame() {
    const QString file = test::allCaptures().first();
    const QByteArray old_path = qgetenv("PATH");
    {
      // No wireshark (none in PATH, and DDPSCOPE_WIRESHARK names none, so a Wireshark
      // installed in /usr/bin is not found either): the action is disabled.
      qputenv("PATH", tmp_.path().toUtf8());
      qputenv("DDPSCOPE_WIRESHARK", tmp_.filePath(QStringLiteral("no-wireshark")).toUtf8());
      MainWindow w;
      QVERIFY(w.loadSynchronously(file));
      w.focusFrame(1);
      QVERIFY(!w.wiresharkAction()->isEnabled());
    }
    // A stand-in wireshark that records its arguments.
    const QString bin = tmp_.filePath(QStringLiteral("bin"));
    QVERIFY(QDir().mkpath(bin));
    const QString out = tmp_.filePath(QStringLiteral("args.txt"));
    QFile script(bin + QStringLiteral("/wireshark"));
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write(QStringLiteral("#!/bin/sh\necho \"$@\" > '%1'\n").arg(out).toUtf8());
    script.close();
    script.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    qunsetenv("DDPSCOPE_WIRESHARK");
    qputenv("PATH", bin.toUtf8() + ":" + old_path);
    {
      MainWindow w;
      QVERIFY(w.loadSynchronously(file));
      QVERIFY(!w.wiresharkAction()->isEnabled());  // no frame chosen yet
      w.focusFrame(3);
      QVERIFY(w.wiresharkAction()->isEnabled());
      w.wiresharkAction()->trigger();
      QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(out).size() > 0, 10000);
      QFile f(out);
      QVERIFY(f.open(QIODevice::ReadOnly));
      QCOMPARE(QString::fromUtf8(f.readAll()).trimmed(), QStringLiteral("-r %1 -g 3").arg(file));
    }
    qputenv("PATH", old_path);
  }

  void viewNamesParse() {
    QCOMPARE(MainWindow::parseView(QStringLiteral("msn")), std::optional(MainWindow::ViewMsn));
    QCOMPARE(MainWindow::parseView(QStringLiteral("Bytes")), std::optional(MainWindow::ViewBytes));
    QVERIFY(!MainWindow::parseView(QStringLiteral("nope")));
  }
};

QTEST_MAIN(MainWindowTest)
#include "main_window_test.moc"
