// SPDX-License-Identifier: GPL-2.0-or-later
#include "replay_page.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace ddpscope::gui {

namespace {

enum Column { kMessage, kStream, kDirection, kExpected, kDifference, kFrame, kColumns };
constexpr int kFrameRole = Qt::UserRole + 1;
constexpr int kDefaultWaitMs = 3000;  // replay's --wait-ms

QSpinBox* port_spin(const QString& none) {
  auto* s = new QSpinBox;
  s->setRange(0, 65535);
  s->setSpecialValueText(none);  // 0
  return s;
}

}  // namespace

ReplayPage::ReplayPage(QWidget* parent) : QWidget(parent) {
  stream_ = new QSpinBox;
  stream_->setRange(0, 0);
  stream_->setToolTip(
      tr("The stream's number, as the Streams page and ddpscope analyze number "
         "them"));
  all_streams_ = new QCheckBox(tr("Every stream, in captured order"));
  side_ = new QComboBox;
  side_->addItem(tr("client (initiator): connect to the peer"), QStringLiteral("client"));
  side_->addItem(tr("server (responder): listen on the address"), QStringLiteral("server"));
  peer_ = new QLineEdit;
  peer_->setPlaceholderText(QStringLiteral("127.0.0.1:4420"));
  peer_->setToolTip(tr("HOST:PORT of the live peer (client), or to listen on (server)"));
  llp_ = new QComboBox;
  llp_->addItem(tr("MPA over TCP"), QStringLiteral("mpa"));
  llp_->addItem(tr("SCTP (RFC 5043)"), QStringLiteral("sctp"));
  sctp_stack_ = new QComboBox;
  sctp_stack_->addItem(tr("auto"), QStringLiteral("auto"));
  sctp_stack_->addItem(tr("kernel (Linux SCTP)"), QStringLiteral("kernel"));
  sctp_stack_->addItem(tr("user (usrsctp)"), QStringLiteral("user"));
  udp_port_ = port_spin(tr("none: native SCTP"));
  peer_udp_port_ = port_spin(tr("9899 (RFC 6951)"));
  ignore_ = new QLineEdit;
  ignore_->setPlaceholderText(QStringLiteral("nvme.sqhd,smb2.credits"));
  ignore_->setToolTip(
      tr("ULP fields not compared besides the defaults, comma-separated "
         "(ddpscope replay --help lists them)"));
  fault_ = new QLineEdit;
  fault_->setPlaceholderText(QStringLiteral("overrun:17:1"));
  fault_->setToolTip(
      tr("KIND:N[:STREAM]: a fault in our message N (as the differences number them) of every "
         "stream or of STREAM: skip, corrupt, overrun or invalidate-key (ddpscope replay "
         "--help)"));
  wait_ms_ = new QSpinBox;
  wait_ms_->setRange(100, 600000);
  wait_ms_->setSingleStep(500);
  wait_ms_->setValue(kDefaultWaitMs);
  wait_ms_->setSuffix(tr(" ms"));
  wait_ms_->setToolTip(tr("How long to wait for each message of the live peer"));
  run_ = new QPushButton(tr("&Replay"));
  stop_ = new QPushButton(tr("S&top"));
  status_ = new QLabel(tr("Open a capture file to replay one of its streams"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  tree_ = new QTreeWidget;
  tree_->setColumnCount(kColumns);
  tree_->setHeaderLabels({tr("Message"), tr("Stream"), tr("Direction"), tr("Expected"),
                          tr("Difference"), tr("Frame")});
  tree_->setRootIsDecorated(false);
  tree_->setUniformRowHeights(true);
  tree_->setAlternatingRowColors(true);
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setSectionResizeMode(kDifference, QHeaderView::Stretch);
  tree_->setAccessibleName(tr("Replay differences"));

  auto* form = new QFormLayout;
  auto* stream_row = new QHBoxLayout;
  stream_row->addWidget(stream_);
  stream_row->addWidget(all_streams_);
  stream_row->addStretch(1);
  form->addRow(tr("Stream:"), stream_row);
  form->addRow(tr("Side to replay:"), side_);
  form->addRow(tr("Live peer:"), peer_);
  form->addRow(tr("Lower layer:"), llp_);
  form->addRow(tr("SCTP stack:"), sctp_stack_);
  auto* udp_row = new QHBoxLayout;
  udp_row->addWidget(new QLabel(tr("local")));
  udp_row->addWidget(udp_port_);
  udp_row->addWidget(new QLabel(tr("peer's")));
  udp_row->addWidget(peer_udp_port_);
  udp_row->addStretch(1);
  form->addRow(tr("SCTP over UDP ports:"), udp_row);
  form->addRow(tr("Not compared:"), ignore_);
  form->addRow(tr("Inject a fault:"), fault_);
  form->addRow(tr("Wait for each peer message:"), wait_ms_);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_);
  buttons->addWidget(stop_);
  buttons->addWidget(status_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(tree_, 1);

  connect(run_, &QPushButton::clicked, this, [this] { start(); });
  connect(stop_, &QPushButton::clicked, this, &ReplayPage::stop);
  connect(peer_, &QLineEdit::returnPressed, this, [this] { start(); });
  connect(llp_, &QComboBox::currentIndexChanged, this, &ReplayPage::updateState);
  connect(all_streams_, &QCheckBox::toggled, this, &ReplayPage::updateState);
  connect(tree_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    if (item == nullptr) return;
    const quint64 frame = item->data(kFrame, kFrameRole).toULongLong();
    if (frame) emit frameChosen(frame);
  });
  updateState();
}

ReplayPage::~ReplayPage() {
  stop();
}

void ReplayPage::setCapture(const QString& path, int streams) {
  if (path != capture_) {
    stop();
    tree_->clear();
  }
  capture_ = path;
  stream_->setRange(0, std::max(streams - 1, 0));
  if (!isRunning())
    status_->setText(
        path.isEmpty() ? tr("A live capture has no file to replay: save it, then open it")
        : streams == 0
            ? tr("No stream in this capture")
            : tr("Replay a stream of %1 against a live peer").arg(QFileInfo(path).fileName()));
  updateState();
}

void ReplayPage::setStream(int stream) {
  if (stream >= 0 && stream <= stream_->maximum()) stream_->setValue(stream);
}

QString ReplayPage::program() const {
  if (!program_.isEmpty()) return program_;
  const QString beside = QCoreApplication::applicationDirPath() + QStringLiteral("/ddpscope");
  return QFileInfo(beside).isExecutable() ? beside : QStringLiteral("ddpscope");
}

QStringList ReplayPage::arguments() const {
  QStringList a = {QStringLiteral("replay"), capture_};
  if (all_streams_->isChecked())
    a << QStringLiteral("--all-streams");
  else
    a << QStringLiteral("--stream-index") << QString::number(stream_->value());
  a << QStringLiteral("--side") << side_->currentData().toString() << QStringLiteral("--peer")
    << peer_->text().trimmed();
  if (llp_->currentData().toString() == QLatin1String("sctp")) {
    a << QStringLiteral("--llp") << QStringLiteral("sctp") << QStringLiteral("--sctp-stack")
      << sctp_stack_->currentData().toString();
    if (udp_port_->value())
      a << QStringLiteral("--sctp-udp-port") << QString::number(udp_port_->value());
    if (udp_port_->value() && peer_udp_port_->value())
      a << QStringLiteral("--sctp-peer-udp-port") << QString::number(peer_udp_port_->value());
  }
  for (const QString& f : ignore_->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
    if (!f.trimmed().isEmpty()) a << QStringLiteral("--ignore") << f.trimmed();
  if (!fault_->text().trimmed().isEmpty())
    a << QStringLiteral("--fault") << fault_->text().trimmed();
  if (wait_ms_->value() != kDefaultWaitMs)
    a << QStringLiteral("--wait-ms") << QString::number(wait_ms_->value());
  a << QStringLiteral("--json");
  return a;
}

bool ReplayPage::isRunning() const {
  return process_ != nullptr;
}

QString ReplayPage::statusText() const {
  return status_->text();
}

bool ReplayPage::start() {
  if (isRunning()) return false;
  if (capture_.isEmpty()) {
    status_->setText(tr("Open a capture file to replay one of its streams"));
    return false;
  }
  static const QRegularExpression host_port(
      QStringLiteral("^[^:\\s]+:[0-9]{1,5}$|^\\[.+\\]:[0-9]{1,5}$"));
  if (!host_port.match(peer_->text().trimmed()).hasMatch()) {
    status_->setText(tr("The live peer is HOST:PORT"));
    peer_->setFocus();
    return false;
  }
  tree_->clear();
  process_ = new QProcess(this);
  QProcess* p = process_;
  connect(p, &QProcess::finished, this, [this, p](int code, QProcess::ExitStatus st) {
    if (p != process_) return;  // stopped
    processFinished(st == QProcess::NormalExit ? code : -1);
  });
  connect(p, &QProcess::errorOccurred, this, [this, p](QProcess::ProcessError e) {
    if (p != process_ || e != QProcess::FailedToStart) return;
    status_->setText(tr("Cannot run %1: %2").arg(program(), p->errorString()));
    process_ = nullptr;
    p->deleteLater();
    updateState();
    emit replayFinished();
  });
  status_->setText(side_->currentData().toString() == QLatin1String("server")
                       ? tr("Waiting for the live client on %1…").arg(peer_->text().trimmed())
                       : tr("Replaying against %1…").arg(peer_->text().trimmed()));
  p->start(program(), arguments());
  updateState();
  return true;
}

void ReplayPage::stop() {
  if (process_ == nullptr) return;
  QProcess* p = process_;
  process_ = nullptr;
  p->disconnect(this);
  p->terminate();
  if (!p->waitForFinished(3000)) p->kill();
  p->waitForFinished(1000);
  p->deleteLater();
  status_->setText(tr("Replay stopped"));
  updateState();
}

void ReplayPage::processFinished(int exitCode) {
  QProcess* p = process_;
  process_ = nullptr;
  const QByteArray out = p->readAllStandardOutput();
  const QString err = QString::fromUtf8(p->readAllStandardError()).trimmed();
  p->deleteLater();
  // 0: no difference, 1: differences (both results); anything else: the replay failed.
  if (exitCode == 0 || exitCode == 1) {
    showResult(out, exitCode);
  } else {
    status_->setText(tr("The replay failed (exit %1): %2")
                         .arg(exitCode)
                         .arg(err.isEmpty() ? QString::fromUtf8(out).trimmed() : err));
  }
  updateState();
  emit replayFinished();
}

void ReplayPage::showResult(const QByteArray& json, int exitCode) {
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
  if (!doc.isObject()) {
    status_->setText(
        tr("The replay's report is not JSON (%1), exit %2").arg(error.errorString()).arg(exitCode));
    return;
  }
  const QJsonObject top = doc.object();
  int messages = 0, differences = 0;
  for (const QJsonValue sv : top.value(QStringLiteral("streams")).toArray()) {
    const QJsonObject s = sv.toObject();
    const int stream = s.value(QStringLiteral("stream")).toInt(-1);
    messages += s.value(QStringLiteral("messages")).toInt();
    for (const QJsonValue dv : s.value(QStringLiteral("differences")).toArray()) {
      const QJsonObject d = dv.toObject();
      auto* item = new QTreeWidgetItem(tree_);
      const int message = d.value(QStringLiteral("message")).toInt();
      if (message) item->setText(kMessage, QString::number(message));
      if (stream >= 0) item->setText(kStream, QString::number(stream));
      item->setText(kDirection, d.value(QStringLiteral("direction")).toString());
      item->setText(kExpected, d.value(QStringLiteral("expected")).toString());
      item->setText(kDifference, d.value(QStringLiteral("difference")).toString());
      item->setToolTip(kDifference, item->text(kDifference));
      const quint64 frame = quint64(d.value(QStringLiteral("frame")).toDouble());
      if (frame) {
        item->setText(kFrame, QString::number(frame));
        item->setData(kFrame, kFrameRole, frame);
      }
      ++differences;
    }
  }
  for (int c = 0; c < kColumns; ++c)
    if (c != kDifference) tree_->resizeColumnToContents(c);
  status_->setText((differences == 1 ? tr("1 difference") : tr("%1 differences").arg(differences)) +
                   (messages == 1 ? tr(" in 1 captured message replayed")
                                  : tr(" in %1 captured messages replayed").arg(messages)) +
                   (exitCode == 0 ? tr(": the live peer did as the capture shows") : QString()));
}

void ReplayPage::updateState() {
  const bool running = isRunning();
  const bool sctp = llp_->currentData().toString() == QLatin1String("sctp");
  run_->setEnabled(!running && !capture_.isEmpty());
  stop_->setEnabled(running);
  stream_->setEnabled(!all_streams_->isChecked());
  for (QWidget* w : {static_cast<QWidget*>(sctp_stack_), static_cast<QWidget*>(udp_port_),
                     static_cast<QWidget*>(peer_udp_port_)})
    w->setEnabled(sctp);
  for (QWidget* w : {static_cast<QWidget*>(stream_), static_cast<QWidget*>(all_streams_),
                     static_cast<QWidget*>(side_), static_cast<QWidget*>(peer_),
                     static_cast<QWidget*>(llp_), static_cast<QWidget*>(ignore_)})
    if (running) w->setEnabled(false);
  if (!running) {
    all_streams_->setEnabled(true);
    side_->setEnabled(true);
    peer_->setEnabled(true);
    llp_->setEnabled(true);
    ignore_->setEnabled(true);
    wait_ms_->setEnabled(true);
  }
}

}  // namespace ddpscope::gui
