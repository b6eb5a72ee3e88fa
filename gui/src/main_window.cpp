// SPDX-License-Identifier: GPL-2.0-or-later
#include "main_window.h"

#include <algorithm>

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QThread>
#include <QToolBar>
#include <QTreeView>
#include <QVBoxLayout>
#include <utility>

#include "analysis_worker.h"
#include "bytes_model.h"
#include "bytes_page.h"
#include "capture_dialog.h"
#include "findings_model.h"
#include "findings_page.h"
#include "labels.h"
#include "msn_chart_widget.h"
#include "msn_page.h"
#include "placement_trace_widget.h"
#include "region_map_widget.h"
#include "region_table_model.h"
#include "regions_file.h"
#include "regions_page.h"
#include "replay_page.h"
#include "stream_tree_model.h"
#include "streams_page.h"
#include "timing_page.h"
#include "wireshark_launch.h"

namespace ddpscope::gui {
namespace {
const char* const kViewNames[] = {"streams", "regions",   "msn",    "findings",
                                  "bytes",   "placement", "timing", "replay"};
constexpr int kMaxRecent = 10;

QString wiresharkPath() {
  return findWireshark();
}
}  // namespace

std::optional<MainWindow::View> MainWindow::parseView(const QString& name) {
  for (int i = 0; i < ViewCount; ++i)
    if (name.compare(QLatin1String(kViewNames[i]), Qt::CaseInsensitive) == 0) return View(i);
  return std::nullopt;
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  qRegisterMetaType<SnapshotPtr>("ddpscope::gui::SnapshotPtr");
  setWindowTitle(tr("ddpscope"));
  setAcceptDrops(true);
  buildUi();
  buildMenus();

  thread_ = new QThread(this);
  thread_->setObjectName(QStringLiteral("ddpscope-analysis"));
  worker_ = new AnalysisWorker;
  worker_->moveToThread(thread_);
  connect(thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(this, &MainWindow::startAnalysis, worker_, &AnalysisWorker::analyze);
  connect(worker_, &AnalysisWorker::progress, this, &MainWindow::onWorkerProgress);
  connect(worker_, &AnalysisWorker::snapshotReady, this, &MainWindow::onWorkerSnapshot);
  connect(worker_, &AnalysisWorker::finished, this, &MainWindow::onWorkerFinished);
  connect(this, &MainWindow::startLiveCapture, worker_, &AnalysisWorker::capture);
  connect(worker_, &AnalysisWorker::liveStatus, this, &MainWindow::onWorkerLiveStatus);
  thread_->start();
  updateActions();
}

MainWindow::~MainWindow() {
  worker_->requestCancel(job_);
  thread_->quit();
  thread_->wait();
}

void MainWindow::buildUi() {
  tabs_ = new QTabWidget(this);
  tabs_->setDocumentMode(true);
  setCentralWidget(tabs_);

  // (1) Streams.
  streams_page_ = new StreamsPage;
  streams_view_ = streams_page_;
  stream_model_ = streams_page_->model();
  tabs_->addTab(streams_page_, tr("&Streams"));
  connect(streams_page_, &StreamsPage::itemChosen, this, [this](int region, quint64 frame) {
    if (syncing_) return;
    if (region >= 0) selectRegion(region);
    if (frame) {
      focused_frame_ = frame;
      updateActions();
    }
  });

  // (2) Regions: table above, map below.
  regions_page_ = new RegionsPage;
  region_model_ = regions_page_->model();
  regions_view_ = regions_page_->view();
  region_map_ = regions_page_->map();
  tabs_->addTab(regions_page_, tr("&Regions"));
  connect(regions_page_, &RegionsPage::regionChosen, this, [this](int region) {
    if (!syncing_) selectRegion(region);
  });
  connect(regions_page_, &RegionsPage::frameClicked, this,
          [this](quint64 frame) { focusFrame(frame); });

  // (3) MSN chart.
  msn_page_ = new MsnPage;
  msn_chart_ = msn_page_->chart();
  series_combo_ = msn_page_->seriesCombo();
  tabs_->addTab(msn_page_, tr("&MSN"));
  connect(msn_page_, &MsnPage::frameClicked, this, [this](quint64 frame) { focusFrame(frame); });

  // (4) Findings.
  findings_page_ = new FindingsPage;
  findings_model_ = findings_page_->model();
  findings_proxy_ = findings_page_->proxy();
  findings_view_ = findings_page_->view();
  tabs_->addTab(findings_page_, tr("&Findings"));
  connect(findings_page_, &FindingsPage::findingSelected, this,
          [this](quint64 frame, int stream, int direction) {
            if (syncing_) return;
            focusFrame(
                frame,
                stream >= 0 ? std::optional<std::uint32_t>(std::uint32_t(stream)) : std::nullopt,
                direction);
          });
  connect(findings_page_, &FindingsPage::findingActivated, this, [this] {
    if (wireshark_action_->isEnabled()) openInWireshark();
  });

  // (5) Shadow buffer bytes.
  bytes_page_ = new BytesPage;
  bytes_model_ = bytes_page_->model();
  tabs_->addTab(bytes_page_, tr("&Bytes"));
  connect(bytes_page_, &BytesPage::regionChosen, this,
          [this](int i) { bytes_page_->setRegion(snap_, i); });
  connect(bytes_page_, &BytesPage::exportRequested, this, &MainWindow::exportBytes);
  connect(bytes_page_, &BytesPage::frameActivated, this, [this](quint64 f) { focusFrame(f); });

  // (6) Placement trace of the selected region.
  placement_ = new PlacementTraceWidget;
  tabs_->addTab(placement_, tr("&Placement"));
  connect(placement_, &PlacementTraceWidget::rangeClicked, this,
          [this](quint64 frame) { focusFrame(frame); });

  // (7) Timing: latency histograms, throughput and stalls, the slowest operations.
  timing_page_ = new TimingPage;
  tabs_->addTab(timing_page_, tr("&Timing"));
  connect(timing_page_, &TimingPage::frameChosen, this, [this](quint64 frame, int stream, int dir) {
    focusFrame(frame,
               stream >= 0 ? std::optional<std::uint32_t>(std::uint32_t(stream)) : std::nullopt,
               dir);
  });

  // (8) Replay one stream of the file against a live peer (`ddpscope replay`): its differences,
  // each focusing the captured frame of the message that differed.
  replay_page_ = new ReplayPage;
  tabs_->addTab(replay_page_, tr("R&eplay"));
  connect(replay_page_, &ReplayPage::frameChosen, this,
          [this](quint64 frame) { focusFrame(frame); });
  connect(streams_page_, &StreamsPage::replayRequested, this, [this](int stream) {
    replay_page_->setStream(stream);
    showView(ViewReplay);
    replay_page_->peerEdit()->setFocus();
  });

  // Status bar: progress and Cancel.
  status_label_ = new QLabel(tr("Open a capture (File › Open, drop a file here)"));
  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(240);
  progress_->setTextVisible(true);
  progress_->hide();
  cancel_button_ = new QPushButton(tr("Cancel"));
  cancel_button_->hide();
  connect(cancel_button_, &QPushButton::clicked, this, &MainWindow::cancelRunning);
  capture_label_ = new QLabel;
  capture_label_->setAccessibleName(tr("Capture counters"));
  capture_label_->hide();
  statusBar()->addWidget(status_label_, 1);
  statusBar()->addPermanentWidget(capture_label_);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_button_);
  connect(tabs_, &QTabWidget::currentChanged, this, [this] { updateActions(); });
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open…"), this, &MainWindow::openDialog);
  open->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  reload_action_ = file->addAction(tr("Re&load"), this, [this] {
    if (!path_.isEmpty()) openFile(path_, regions_path_);
  });
  file->addAction(tr("Apply Re&gions File…"), this, &MainWindow::openRegionsDialog);
  reload_action_->setShortcut(QKeySequence::Refresh);
  file->addSeparator();
  capture_action_ = file->addAction(tr("&Capture…"), this, &MainWindow::captureDialog);
  capture_action_->setShortcut(QKeySequence(tr("Ctrl+K")));
  capture_action_->setToolTip(tr("Capture live on an interface; the views follow it"));
  stop_capture_action_ = file->addAction(tr("S&top Capture"), this, &MainWindow::stopCapture);
  stop_capture_action_->setShortcut(QKeySequence(tr("Ctrl+Shift+K")));
  stop_capture_action_->setToolTip(tr("Stop the capture and finish its analysis"));
  file->addSeparator();
  export_action_ = file->addAction(tr("&Export Region Bytes…"), this, &MainWindow::exportBytes);
  export_action_->setShortcut(QKeySequence(tr("Ctrl+E")));
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  const QString names[ViewCount] = {tr("Streams"),  tr("Region Map"),   tr("MSN Sequences"),
                                    tr("Findings"), tr("Shadow Bytes"), tr("Placement Trace"),
                                    tr("Timing"),   tr("Replay")};
  for (int i = 0; i < ViewCount; ++i) {
    QAction* a = view->addAction(names[i], this, [this, i] { showView(View(i)); });
    a->setShortcut(QKeySequence(QStringLiteral("Ctrl+%1").arg(i + 1)));
  }
  view->addSeparator();
  QAction* find = view->addAction(tr("Filter Findings"), this, [this] {
    showView(ViewFindings);
    findings_page_->focusFilter();
  });
  find->setShortcut(QKeySequence::Find);

  QMenu* tools = menuBar()->addMenu(tr("&Tools"));
  wireshark_action_ =
      tools->addAction(tr("Open in &Wireshark at This Frame"), this, &MainWindow::openInWireshark);
  wireshark_action_->setShortcut(QKeySequence(tr("Ctrl+Shift+W")));
  QAction* cancel = tools->addAction(tr("&Cancel Analysis"), this, &MainWindow::cancelRunning);
  cancel->setShortcut(QKeySequence(Qt::Key_Escape));
  tools->addSeparator();
  // Whose Data Sink the findings' verdicts are for (findings/sink_profile.h): choosing one
  // analyses the open file again, as `ddpscope analyze --sink-profile` would.
  QMenu* profiles = tools->addMenu(tr("Data Sink &Profile"));
  auto* group = new QActionGroup(this);
  for (const SinkProfile p : {SinkProfile::rfc, SinkProfile::siw}) {
    QAction* a = profiles->addAction(p == SinkProfile::rfc
                                         ? tr("&RFC (%1)").arg(qstr(sink_profile_description(p)))
                                         : tr("&siw (%1)").arg(qstr(sink_profile_description(p))),
                                     this, [this, p] { setSinkProfile(p); });
    a->setCheckable(true);
    a->setData(QString::fromUtf8(to_string(p).data(), qsizetype(to_string(p).size())));
    group->addAction(a);
    sink_profile_actions_.push_back(a);
  }
  updateSinkProfileActions();

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About"), this, [this] {
    QMessageBox::about(this, tr("About ddpscope"),
                       tr("ddpscope-gui: iWARP (MPA/DDP/RDMAP) capture analysis.\n"
                          "Licence: GPL-2.0-or-later."));
  });

  QToolBar* tb = addToolBar(tr("Main"));
  tb->setObjectName(QStringLiteral("mainToolBar"));
  tb->addAction(open);
  tb->addAction(reload_action_);
  tb->addAction(capture_action_);
  tb->addAction(stop_capture_action_);
  tb->addAction(wireshark_action_);
  refreshRecentMenu();
}

void MainWindow::setSinkProfile(SinkProfile p) {
  const bool changed = file_hints_.sink_profile.value_or(SinkProfile::rfc) != p;
  file_hints_.sink_profile = p;
  updateSinkProfileActions();
  if (changed && !path_.isEmpty() && !isCapturing()) openFile(path_, regions_path_);
}

void MainWindow::updateSinkProfileActions() {
  const SinkProfile p = file_hints_.sink_profile.value_or(SinkProfile::rfc);
  for (QAction* a : sink_profile_actions_)
    a->setChecked(a->data().toString() ==
                  QString::fromUtf8(to_string(p).data(), qsizetype(to_string(p).size())));
}

void MainWindow::openDialog() {
  QSettings settings;
  const QString dir = settings.value(QStringLiteral("lastDir")).toString();
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open Capture"), dir, tr("Captures (*.pcap *.pcapng *.cap);;All files (*)"));
  if (path.isEmpty()) return;
  settings.setValue(QStringLiteral("lastDir"), QFileInfo(path).absolutePath());
  openFile(path);
}

void MainWindow::openRegionsDialog() {
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Regions File (STag, base, length, sink)"), QFileInfo(path_).absolutePath(),
      tr("Regions (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  if (path_.isEmpty()) {
    regions_path_ = path;
    return;
  }
  openFile(path_, path);
}

void MainWindow::addRecent(const QString& path) {
  QSettings settings;
  QStringList list = settings.value(QStringLiteral("recentFiles")).toStringList();
  const QString abs = QFileInfo(path).absoluteFilePath();
  list.removeAll(abs);
  list.prepend(abs);
  while (list.size() > kMaxRecent)
    list.removeLast();
  settings.setValue(QStringLiteral("recentFiles"), list);
  refreshRecentMenu();
}

void MainWindow::refreshRecentMenu() {
  recent_menu_->clear();
  const QStringList list = QSettings().value(QStringLiteral("recentFiles")).toStringList();
  for (int i = 0; i < list.size(); ++i) {
    const QString p = list[i];
    recent_menu_->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(p), this,
                            [this, p] { openFile(p); });
  }
  recent_menu_->setEnabled(!list.isEmpty());
}

void MainWindow::openFile(const QString& path, const QString& regions) {
  if (path != path_) regions_path_.clear();
  // A file is analysed with the command line's hints (none unless given, as in the CLI).
  capture_ports_ = QList<quint16>(file_hints_.ports.begin(), file_hints_.ports.end());
  capture_crc_ = file_hints_.crc;
  path_ = path;
  if (!regions.isEmpty()) regions_path_ = regions;
  // Like `ddpscope analyze`, a NAME.regions.json beside the capture is not loaded by itself
  // (the findings would differ from the CLI's); the status bar names it.
  addRecent(path);
  if (running_job_) worker_->requestCancel(running_job_);
  capturing_ = false;
  capture_label_->hide();
  cancel_button_->setText(tr("Cancel"));
  running_job_ = ++job_;
  status_label_->setText(tr("Analysing %1…").arg(QFileInfo(path).fileName()));
  progress_->setValue(0);
  progress_->show();
  cancel_button_->show();
  emit startAnalysis(path, regions_path_, running_job_, file_hints_);
  updateActions();
}

bool MainWindow::loadSynchronously(const QString& path, const QString& regions) {
  path_ = path;
  regions_path_ = regions;
  RegionsFile file;
  QString err;
  if (!regions_path_.isEmpty() && !loadRegionsFile(regions_path_, file, &err)) {
    auto failed = std::make_shared<Snapshot>();
    failed->path = path.toStdString();
    failed->final = true;
    failed->error = err.toStdString();
    failed->model = std::make_shared<const Model>();
    applySnapshot(failed);
    return false;
  }
  AnalyzerOptions options;
  options.protection_domains = file.protection_domains;
  options.hints = file_hints_.hints;
  options.sink_profile = file_hints_.sink_profile;
  options.timing = gui_timing_options();
  capture_ports_ = QList<quint16>(file_hints_.ports.begin(), file_hints_.ports.end());
  capture_crc_ = file_hints_.crc;
  auto snap = std::const_pointer_cast<Snapshot>(analyze_capture(
      path.toStdString(), {}, options,
      // No regions file: none given (an empty list would make every STag
      // unknown, as the CLI's --regions does only when given).
      regions_path_.isEmpty() ? std::nullopt
                              : std::optional<std::vector<RegionSpec>>(std::move(file.regions))));
  snap->regions_file = regions_path_.toStdString();
  applySnapshot(snap);
  return snap->error.empty();
}

void MainWindow::onWorkerProgress(quint64 job, quint64 done, quint64 total, quint64 frames) {
  if (job != running_job_) return;
  progress_->setValue(total ? int(1000.0 * double(done) / double(total)) : 0);
  progress_->setFormat(tr("%1 frames").arg(frames));
}

void MainWindow::onWorkerSnapshot(quint64 job, SnapshotPtr snap) {
  if (job != running_job_) return;
  applySnapshot(std::move(snap));
}

void MainWindow::onWorkerFinished(quint64 job, SnapshotPtr snap) {
  if (job != running_job_) return;
  running_job_ = 0;
  const bool was_capture = capturing_;
  capturing_ = false;
  progress_->hide();
  cancel_button_->hide();
  cancel_button_->setText(tr("Cancel"));
  if (was_capture) {
    // The savefile now reads as a file: Reload and Open in Wireshark use it.
    if (!snap->path.empty() && snap->error.empty()) {
      path_ = QString::fromStdString(snap->path);
      addRecent(path_);
    }
    setCaptureStatus(snap->live);
    if (snap->frames_read == 0 && !snap->error.empty()) capture_label_->hide();  // never started
  }
  applySnapshot(snap);
  if (was_capture && !snap->error.empty())
    showError(snap->frames_read == 0 ? tr("Cannot capture") : tr("Capture failed"),
              QString::fromStdString(snap->error));
  else if (!snap->error.empty() && snap->frames_read == 0)
    QMessageBox::warning(this, tr("Cannot analyse capture"), QString::fromStdString(snap->error));
  if (pending_frame_ != 0 && snap->model) {
    const std::uint64_t frame = std::exchange(pending_frame_, 0);
    focusFrame(frame);
  }
  emit analysisFinished();
}

void MainWindow::onWorkerLiveStatus(quint64 job, const LiveStatus& status) {
  if (job == running_job_) setCaptureStatus(status);
}

void MainWindow::setCaptureStatus(const LiveStatus& st) {
  live_status_ = st;
  QString text = tr("%1 packets, %2").arg(st.frames).arg(bytesText(st.bytes));
  if (st.have_kernel_stats)
    text += tr(", %1 dropped").arg(st.kernel_dropped + st.interface_dropped);
  capture_label_->setText(text);
  capture_label_->show();
}

void MainWindow::cancelRunning() {
  if (running_job_) worker_->requestCancel(running_job_);
}

void MainWindow::startCapture(const CaptureRequest& request) {
  if (request.interface.trimmed().isEmpty()) {
    showError(tr("Cannot capture"), tr("No interface given."));
    return;
  }
  const QString filter_error = filterError(request.filter);
  if (!filter_error.isEmpty()) {
    showError(tr("Cannot capture"), filter_error);
    return;
  }
  if (running_job_) worker_->requestCancel(running_job_);
  last_error_.clear();
  path_.clear();                        // set to the savefile once the capture has ended
  regions_path_ = request.regionsPath;  // Reload of the savefile applies it again
  capture_ports_ = request.ports;
  capture_crc_ = request.crc;
  capture_markers_ = request.markers;
  capturing_ = true;
  running_job_ = ++job_;
  status_label_->setText(tr("Capturing on %1%2…")
                             .arg(request.interface, request.filter.isEmpty()
                                                         ? QString()
                                                         : tr(" (%1)").arg(request.filter)));
  setCaptureStatus(LiveStatus{});
  progress_->hide();
  cancel_button_->setText(tr("Stop"));
  cancel_button_->show();
  CaptureRequest with_profile = request;
  if (!with_profile.sinkProfile) with_profile.sinkProfile = file_hints_.sink_profile;
  emit startLiveCapture(with_profile, running_job_);
  updateActions();
}

void MainWindow::stopCapture() {
  if (isCapturing()) worker_->requestCancel(running_job_);
}

void MainWindow::captureDialog() {
  // Non-blocking (open(), not exec()): the window keeps drawing while the dialog is up.
  auto* d = new CaptureDialog(this);
  d->setAttribute(Qt::WA_DeleteOnClose);
  connect(d, &QDialog::accepted, this, [this, d] { startCapture(d->request()); });
  d->open();
}

void MainWindow::showError(const QString& title, const QString& text) {
  last_error_ = text;
  status_label_->setText(tr("%1: %2").arg(title, text));
  // Non-blocking, so that scripts and tests are never stuck on it.
  auto* box = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::Ok, this);
  box->setObjectName(QStringLiteral("errorBox"));
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

QString MainWindow::statusText() const {
  return status_label_->text();
}

QString MainWindow::captureStatusText() const {
  return capture_label_->text();
}

void MainWindow::applySnapshot(SnapshotPtr snap) {
  snap_ = std::move(snap);
  syncing_ = true;
  const int region_row = bytes_page_->regionCombo()->currentIndex();
  streams_page_->setSnapshot(snap_);
  // A capture whose regions an upper layer advertised opens with them grouped per ULP, in
  // their commands' order (the header still sorts by any column).
  regions_page_->setSnapshot(snap_);
  findings_page_->setSnapshot(snap_);
  populateSelectors();
  // Keep the user's choices across live updates; pick informative defaults otherwise.
  int region = region_row;
  if (region < 0 || std::size_t(region) >= snap_->regions.size()) {
    region = snap_->regions.empty() ? -1 : 0;
    std::uint64_t best = 0;
    for (std::size_t i = 0; i < snap_->regions.size(); ++i) {
      const auto& r = snap_->regions[i];
      const std::uint64_t score =
          (r.overlaps + r.conflicts + r.violations) * 1000000 + r.buffer->bytes_placed() / 1024;
      if (score > best) best = score, region = int(i);
    }
  }
  syncing_ = false;
  selectRegion(region);
  msn_page_->setSnapshot(snap_);
  timing_page_->setSnapshot(snap_);
  replay_page_->setCapture(snap_->live_interface.empty() || snap_->final
                               ? QString::fromStdString(snap_->path)
                               : QString(),
                           int(snap_->model->streams.size()));

  const Model& m = *snap_->model;
  const bool live = !snap_->live_interface.empty();
  const QString name = live && (!snap_->final || snap_->path.empty())
                           ? tr("Capture on %1").arg(QString::fromStdString(snap_->live_interface))
                           : QFileInfo(QString::fromStdString(snap_->path)).fileName();
  QString status = tr("%1: %2 frames, %3 streams, %4 regions, %5 findings")
                       .arg(name)
                       .arg(m.frames)
                       .arg(m.streams.size())
                       .arg(snap_->regions.size())
                       .arg(m.findings.size());
  if (m.findings_dropped) status += tr(" (+%1 not kept)").arg(m.findings_dropped);
  if (!snap_->regions_file.empty())
    status += tr(", regions from %1")
                  .arg(QFileInfo(QString::fromStdString(snap_->regions_file)).fileName());
  else if (!live && !snap_->path.empty()) {
    const QString side = sidecarRegionsFile(QString::fromStdString(snap_->path));
    if (!side.isEmpty())
      status += tr(", %1 not loaded (File › Apply Regions File, or --regions)")
                    .arg(QFileInfo(side).fileName());
  }
  if (snap_->cancelled)
    status += tr(" — cancelled, partial results");
  else if (!snap_->final)
    status += live ? tr(" — capturing…") : tr(" — analysing…");
  else
    status += tr(" — %1 s").arg(snap_->elapsed_s, 0, 'f', 2);
  if (!snap_->error.empty()) status += QStringLiteral(" — ") + QString::fromStdString(snap_->error);
  status_label_->setText(status);
  setWindowTitle(tr("%1 — ddpscope").arg(name));
  updateActions();
}

void MainWindow::populateSelectors() {
  const QSignalBlocker block(bytes_page_->regionCombo());
  bytes_page_->regionCombo()->clear();
  if (!snap_ || !snap_->model) return;
  for (const RegionInfo& r : snap_->regions)
    bytes_page_->regionCombo()->addItem(
        tr("%1  (%2 placed)").arg(regionLabel(*r.buffer), bytesText(r.buffer->bytes_placed())));
}

void MainWindow::selectRegion(int region) {
  const bool was = syncing_;
  syncing_ = true;
  regions_page_->setRegion(snap_, region);
  placement_->setRegion(snap_, region);
  bytes_page_->setRegion(snap_, region);
  syncing_ = was;
}

void MainWindow::showView(View v) {
  tabs_->setCurrentIndex(int(v));
}

QWidget* MainWindow::viewWidget(View v) const {
  return tabs_->widget(int(v));
}

void MainWindow::selectFinding(int findingRow) {
  findings_page_->selectFinding(findingRow);
}

void MainWindow::focusFrame(std::uint64_t frame, std::optional<std::uint32_t> stream,
                            int direction) {
  if (!snap_ || syncing_) return;
  syncing_ = true;
  focused_frame_ = frame;
  if (stream) replay_page_->setStream(int(*stream));
  const auto region = snap_->region_of_frame(frame);
  if (region && !stream) {
    stream = snap_->regions[*region].stream;
  }
  // Stream tree: the region item when the frame placed into one, else the stream/direction.
  streams_page_->showFrame(region, stream, direction, frame);
  if (region) selectRegion(int(*region));
  region_map_->setHighlightFrame(frame);
  placement_->setHighlightFrame(frame);
  if (region) {
    bytes_page_->showFrame(frame);
  }
  msn_page_->showFrame(frame, stream, direction);
  // Findings: the first finding at this frame, unless one at this frame is current.
  findings_page_->showFrame(frame);
  timing_page_->showFrame(frame);
  syncing_ = false;
  status_label_->setText(
      tr("Frame %1").arg(frame) +
      (region ? tr(" placed into %1").arg(regionLabel(*snap_->regions[*region].buffer))
              : QString()));
  updateActions();
}

void MainWindow::updateActions() {
  const bool have = snap_ && snap_->model && !snap_->path.empty() && !isCapturing();
  const bool ws = !wiresharkPath().isEmpty();
  wireshark_action_->setEnabled(ws && have && focused_frame_ > 0);
  wireshark_action_->setToolTip(
      ws ? tr("Runs wireshark %1").arg(wiresharkArguments().join(QLatin1Char(' ')))
         : tr("Wireshark is not installed (not in PATH, /usr/bin or /usr/local/bin)"));
  export_action_->setEnabled(bytes_model_->buffer() != nullptr);
  reload_action_->setEnabled(!path_.isEmpty() && !isCapturing());
  capture_action_->setEnabled(!isCapturing());
  stop_capture_action_->setEnabled(isCapturing());
}

void MainWindow::openInWireshark() {
  const QString ws = wiresharkPath();
  if (ws.isEmpty() || !snap_ || !focused_frame_) return;
  QProcess::startDetached(ws, wiresharkArguments());
}

QStringList MainWindow::wiresharkArguments() const {
  if (!snap_ || snap_->path.empty()) return {};
  WiresharkRequest r;
  r.capture = QString::fromStdString(snap_->path);
  r.frame = focused_frame_;
  r.regions_file = QString::fromStdString(snap_->regions_file);
  r.ports = capture_ports_;
  r.crc = capture_crc_;
  r.markers = capture_markers_;
  if (snap_->model) r.sink_profile = snap_->model->sink_profile;
  return ddpscope::gui::wiresharkArguments(r);
}

void MainWindow::exportBytes() {
  const ShadowBuffer* b = bytes_model_->buffer();
  if (!b) return;
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export Region Bytes"),
      QStringLiteral("stag-%1.bin").arg(b->key.stag, 8, 16, QLatin1Char('0')),
      tr("Raw octets (*.bin);;Hex dump with frames (*.txt)"));
  if (path.isEmpty()) return;
  QString err;
  if (!BytesModel::exportRegion(*b, path, &err))
    QMessageBox::warning(this, tr("Export failed"), err);
  else
    status_label_->setText(tr("Exported %1").arg(path));
}

void MainWindow::dragEnterEvent(QDragEnterEvent* ev) {
  if (ev->mimeData()->hasUrls() && !ev->mimeData()->urls().isEmpty() &&
      ev->mimeData()->urls().first().isLocalFile())
    ev->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* ev) {
  const auto urls = ev->mimeData()->urls();
  if (!urls.isEmpty() && urls.first().isLocalFile()) {
    openFile(urls.first().toLocalFile());
    ev->acceptProposedAction();
  }
}

void MainWindow::closeEvent(QCloseEvent* ev) {
  worker_->requestCancel(job_);
  QMainWindow::closeEvent(ev);
}

}  // namespace ddpscope::gui
